#!/usr/bin/env bash
# Regenerate the command reference in docs/cli.md from the tools' own --help output.
#
# Usage: scripts/gen-cli-docs.sh [--bin DIR] [--in FILE] [--out FILE]
#   --bin DIR   where push-seal, push-open, push-keys, push-send and push-gateway are built (default: .build/debug)
#   --in FILE   the document to regenerate (default: docs/cli.md)
#   --out FILE  where to write it (default: the --in file, in place)
#
# Only the blocks between
#   <!-- BEGIN GENERATED: TOOL --help (run scripts/gen-cli-docs.sh; do not edit) -->
#   <!-- END GENERATED -->
# are rewritten; everything else (the hand-written intros) is kept byte for byte. A block holds
# a command index and, for the tool and for every command and subcommand, its --help verbatim.
# Commands are discovered from the help itself: the COMMANDS section of a tool-level help
# (push-keys), or the USAGE lines naming subcommands (push-seal batch, push-seal media).
# CLITests/CLIDocsTests regenerates into a temporary file and fails when docs/cli.md differs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/.build/debug
in=$root/docs/cli.md
out=
usage() { echo "usage: $0 [--bin DIR] [--in FILE] [--out FILE]" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) [[ $# -ge 2 ]] || usage; bin=$2; shift 2 ;;
    --in) [[ $# -ge 2 ]] || usage; in=$2; shift 2 ;;
    --out) [[ $# -ge 2 ]] || usage; out=$2; shift 2 ;;
    *) usage ;;
  esac
done
out=${out:-$in}
[[ -r $in ]] || { echo "gen-cli-docs: error: cannot read $in" >&2; exit 66; }
for tool in push-seal push-open push-keys push-send push-gateway; do
  [[ -x $bin/$tool ]] || { echo "gen-cli-docs: error: $bin/$tool is not built" >&2; echo "hint: swift build" >&2; exit 66; }
done

# help TOOL [WORD...]: the --help text of a command (fails when --help does not exit 0).
help() {
  local tool=$1
  shift
  "$bin/$tool" "$@" --help
}

# commands TOOL: one line per command, its words after the tool name ("" for the tool itself).
commands() {
  local tool=$1 text section=
  text=$(help "$tool")
  echo ""
  while IFS= read -r line; do
    case $line in
      COMMANDS:|USAGE:) section=$line; continue ;;
      [A-Z]*:*) section=; continue ;;
    esac
    [[ -n $section && $line == "  $tool "* ]] || continue
    # The leading lower-case words after the tool name are the command path.
    local words=() word
    read -r -a all <<< "${line#  "$tool" }"
    for word in "${all[@]}"; do
      [[ $word =~ ^[a-z][a-z-]*$ ]] || break
      words+=("$word")
    done
    [[ ${#words[@]} -gt 0 ]] && echo "${words[*]}"
  done <<< "$text" | awk '!seen[$0]++'
}

# block TOOL: the generated Markdown for one tool.
block() {
  local tool=$1 cmds=() c overview name anchor
  mapfile -t cmds < <(commands "$tool")
  echo
  for c in "${cmds[@]}"; do
    name=$tool${c:+ $c}
    # shellcheck disable=SC2086 # the command words are split on purpose
    # The OVERVIEW paragraph is wrapped with a hanging indent: join it back into one line.
    overview=$(help "$tool" $c | awk '/^OVERVIEW: /{sub(/^OVERVIEW: /, ""); o = $0; on = 1; next}
      on && /^ +[^ ]/{sub(/^ +/, ""); o = o " " $0; next}
      on{exit}
      END{print o}')
    anchor=$(printf '%s' "$name" | tr ' ' '-')
    echo "- [\`$name\`](#$anchor): $overview"
  done
  for c in "${cmds[@]}"; do
    name=$tool${c:+ $c}
    echo
    echo "### \`$name\`"
    echo
    echo '```text'
    # shellcheck disable=SC2086
    help "$tool" $c
    echo '```'
  done
  echo
}

tmp=$(mktemp "${TMPDIR:-/tmp}/cli-md.XXXXXX")
trap 'rm -f "$tmp"' EXIT
begin='^<!-- BEGIN GENERATED: (push-[a-z]+) --help'
skipping=0
found=0
while IFS= read -r line || [[ -n $line ]]; do
  if [[ $skipping -eq 1 ]]; then
    [[ $line == '<!-- END GENERATED -->' ]] || continue
    skipping=0
    printf '%s\n' "$line"
  elif [[ $line =~ $begin ]]; then
    printf '%s\n' "$line"
    block "${BASH_REMATCH[1]}"
    skipping=1
    found=$((found + 1))
  else
    printf '%s\n' "$line"
  fi
done < "$in" > "$tmp"
[[ $skipping -eq 0 ]] || { echo "gen-cli-docs: error: $in: a BEGIN GENERATED block has no END GENERATED line" >&2; exit 65; }
[[ $found -gt 0 ]] || { echo "gen-cli-docs: error: $in has no BEGIN GENERATED block" >&2; exit 65; }
cat "$tmp" > "$out"
