// A local APNs provider API (HTTP/2 over TLS) that validates requests the way Apple documents
// ("Sending notification requests to APNs", "Handling notification responses from APNs"), for
// PushSeal's tests and benchmark. Node 20's built-in http2 (nghttp2), no npm packages.
//
// Two mocks share this command line and config: this one (the reference, with every member
// including the fault scripts: the behaviour and fault tests use it) and native/ (C on
// libnghttp2 + OpenSSL, ~10 µs of CPU per request against Node's ~90: the benchmark's
// throughput rows use it; it implements every member below except faults and script, and
// refuses a config naming them). MockDifferentialTests (Tests/PushSealAPNsTests) sends both the
// same requests and asserts the same answers and record lines: change both together.
//
//   node mock-apns.mjs --config CONFIG.json [--port 0] [--detached]
//
// It stops on SIGTERM/SIGINT, or when its standard input ends unless --detached is given.
//
// Listens on 127.0.0.1 only. Generates a throwaway CA and server certificate at start (openssl
// command line) and prints one line on stdout when ready:
//   listening PORT CAFILE
// CONFIG.json (every member optional except keys):
//   keys: [{keyId, teamId, p8}]         provider keys (the p8's public key checks the JWT)
//   topics: ["com.example.app"]         bundle ids (push-type suffixes are added as APNs does)
//   unregistered: {TOKEN: ms}           410 Unregistered with this timestamp (ms since 1970)
//   expiredTokens: {TOKEN: ms}          410 ExpiredToken with this timestamp
//   badTokens: [TOKEN]                  400 BadDeviceToken (token of another environment)
//   script: {TOKEN: [{status, reason, retryAfter, refuse, delayMs}]}  answers per attempt, then 200
//   record: PATH                        one JSON line per stream (answered or refused), written
//                                       in batches, each before the answers of its round go out (a client that has an answer finds its line; complete once stopped)
//   initialStreams: 1, maxStreams: 1000 SETTINGS_MAX_CONCURRENT_STREAMS before/after a valid token
//   tokenUpdateSeconds: 1200            a newer provider token on one connection sooner: 429 TooManyProviderTokenUpdates
//   faults: {seed, rate500, rate503, rate429, rate410, refusedRate, goawayAfter, goawayReason,
//            streamLimits: [[afterRequests, limit]], delayMs, dropAfter, dropKind}
//     dropAfter: N    once: the first N valid requests that arrive on connections that have
//                     answered one are held unanswered (recorded as accepted, "unanswered": true:
//                     APNs may have delivered them), and when the Nth has arrived in full every
//                     connection holding one is dropped, before any of them is answered;
//                     dropKind "reset" (TCP RST, the default) or "close" (session.destroy())
import http2 from 'node:http2';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';

const args = process.argv.slice(2);
const arg = (name, fallback) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : fallback; };
const config = JSON.parse(fs.readFileSync(arg('--config'), 'utf8'));
const port = Number(arg('--port', '0'));

// Throwaway CA and a server certificate for 127.0.0.1 / localhost, signed by it.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mock-apns-'));
const f = (name) => path.join(dir, name);
const ossl = (...a) => execFileSync('openssl', a, { stdio: ['ignore', 'ignore', 'pipe'] });
ossl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2',
  '-subj', '/CN=PushSeal mock APNs CA', '-keyout', f('ca.key'), '-out', f('ca.pem'),
  '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
ossl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=localhost',
  '-keyout', f('server.key'), '-out', f('server.csr'));
fs.writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
ossl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial',
  '-days', '2', '-extfile', f('ext.cnf'), '-out', f('server.pem'));

const keys = new Map((config.keys || []).map((k) => [k.keyId, {
  teamId: k.teamId, publicKey: crypto.createPublicKey(crypto.createPrivateKey(fs.readFileSync(k.p8))),
}]));
const topics = new Set(config.topics || []);
const unregistered = new Map(Object.entries(config.unregistered || {}));
const expiredTokens = new Map(Object.entries(config.expiredTokens || {}));
const badTokens = new Set(config.badTokens || []);
const script = new Map(Object.entries(config.script || {}));
const attemptsByToken = new Map();
const faults = config.faults || {};
const initialStreams = config.initialStreams ?? 1;
const maxStreams = config.maxStreams ?? 1000;
const tokenUpdateMs = (config.tokenUpdateSeconds ?? 1200) * 1000;
let streamLimitOverride = null;
// Written in batches: lines are gathered while a round of requests is handled and written with
// one write at the end of it (process.nextTick: before Node's http2 sends the answers of that
// round, which happens later in the event loop), so a test that read the file after a client
// got (or lost) answers still sees every request answered so far; stop() writes what is left.
const recordFd = config.record ? fs.openSync(config.record, 'a') : null;
let recordLines = [];
const flushRecord = () => { if (recordLines.length) { const text = recordLines.join(''); recordLines = []; fs.writeSync(recordFd, text); } };
const record = recordFd === null ? null : {
  write: (line) => { if (recordLines.push(line) === 1) process.nextTick(flushRecord); },
  end: () => { flushRecord(); fs.closeSync(recordFd); },
};
// One record line: the fields every line has, then the rest (values JSON-encoded one by one).
const q = JSON.stringify;
const recordLine = (base, rest) => `{"t":${base.t},"session":${base.session},"stream":${base.stream},"token":${q(base.token)},` +
  `"apnsId":${q(base.apnsId)},"collapseId":${q(base.collapseId)}${rest}}\n`;

// Deterministic fault draws (mulberry32).
let seed = (faults.seed ?? 1) >>> 0;
const random = () => { seed = (seed + 0x6D2B79F5) >>> 0; let t = seed; t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };

// Provider tokens: a verified token string is remembered (verifying each request would be the
// mock's bottleneck); per connection and key, the iat of the newest token and when it was first seen.
const verified = new Map();
const b64json = (s) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));

function checkToken(authorization, session) {
  if (!authorization || !authorization.startsWith('bearer ')) return [403, 'MissingProviderToken'];
  // The verdict of the last token string on this connection, else of any seen before: the
  // ES256 signature is verified once per distinct token string; the checks below that depend
  // on time and on the connection run for every request.
  let entry;
  if (authorization === session.lastAuthorization) entry = session.lastEntry;
  else {
    const jwt = authorization.slice(7);
    entry = verified.get(jwt);
    if (!entry) {
      entry = verifyToken(jwt);
      if (!Array.isArray(entry)) { if (verified.size > 10000) verified.clear(); verified.set(jwt, entry); }
    }
    if (Array.isArray(entry)) return entry;
    session.lastAuthorization = authorization;
    session.lastEntry = entry;
  }
  const now = Date.now();
  // A connection whose provider token changes more often than every 20 minutes.
  const newest = session.tokens.get(entry.kid);
  if (newest && newest.iat !== entry.iat && entry.iat > newest.iat) {
    if (now - newest.seenAt < tokenUpdateMs) return [429, 'TooManyProviderTokenUpdates'];
  }
  if (!newest || entry.iat > newest.iat) session.tokens.set(entry.kid, { iat: entry.iat, seenAt: now });
  if (now / 1000 - entry.iat > 3600) return [403, 'ExpiredProviderToken'];
  return null;
}

/// A token's verdict: {kid, iat} when its header, claims and ES256 signature are valid, else the answer.
function verifyToken(jwt) {
  const parts = jwt.split('.');
  if (parts.length !== 3) return [403, 'InvalidProviderToken'];
  let header, claims;
  try { header = b64json(parts[0]); claims = b64json(parts[1]); } catch { return [403, 'InvalidProviderToken']; }
  const key = keys.get(header.kid);
  if (header.alg !== 'ES256' || !key) return [403, 'InvalidProviderToken'];
  if (claims.iss !== key.teamId) return [403, 'InvalidProviderToken'];
  const ok = crypto.verify('sha256', Buffer.from(parts[0] + '.' + parts[1]),
    { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(parts[2], 'base64url'));
  if (!ok || !Number.isInteger(claims.iat)) return [403, 'InvalidProviderToken'];
  return { kid: header.kid, iat: claims.iat };
}

const pushTypes = { alert: '', background: '', location: '.location-query', voip: '.voip',
  complication: '.complication', fileprovider: '.pushkit.fileprovider', mdm: '', liveactivity: '.push-type.liveactivity',
  pushtotalk: '.voip-ptt', widgets: '.push-type.widgets', controls: '.push-type.controls' };
const uuid = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/// The APNs answer [status, reason] for a complete request of `byteCount` body bytes, or null for 200.
function validate(h, token, byteCount, session) {
  if (h[':method'] !== 'POST') return [405, 'MethodNotAllowed'];
  if (!h[':path'].startsWith('/3/device/')) return [404, 'BadPath'];
  if (token.length === 0) return [400, 'MissingDeviceToken'];
  if (!hex.test(token) || token.length % 2 !== 0) return [400, 'BadDeviceToken'];
  const auth = checkToken(h['authorization'], session);
  if (auth) return auth;
  const pushType = h['apns-push-type'] ?? 'alert';
  const headerAnswer = checkHeaders(pushType, h['apns-topic'], h['apns-priority'], h['apns-expiration'], h['apns-collapse-id']);
  if (headerAnswer) return headerAnswer;
  const id = h['apns-id'];
  if (id !== undefined && !uuid.test(id)) return [400, 'BadMessageId'];
  if (byteCount === 0) return [400, 'PayloadEmpty'];
  if (byteCount > (pushType === 'voip' ? 5120 : 4096)) return [413, 'PayloadTooLarge'];
  if (badTokens.has(token)) return [400, 'BadDeviceToken'];
  if (unregistered.has(token)) return [410, 'Unregistered', unregistered.get(token)];
  if (expiredTokens.has(token)) return [410, 'ExpiredToken', expiredTokens.get(token)];
  return null;
}
const hex = /^[0-9a-fA-F]+$/;

// The verdict on a combination of push type, topic, priority, expiration and collapse id,
// remembered (a batch repeats a few combinations; each is checked in full the first time).
const headerVerdicts = new Map();
function checkHeaders(pushType, topic, priority, expiration, collapse) {
  const key = `${pushType}\n${topic}\n${priority}\n${expiration}\n${collapse}`;
  let verdict = headerVerdicts.get(key);
  if (verdict === undefined) {
    verdict = checkHeadersOnce(pushType, topic, priority, expiration, collapse);
    if (headerVerdicts.size > 10000) headerVerdicts.clear();
    headerVerdicts.set(key, verdict);
  }
  return verdict;
}
function checkHeadersOnce(pushType, topic, priority, expiration, collapse) {
  if (!Object.hasOwn(pushTypes, pushType)) return [400, 'InvalidPushType'];  // not `in`: "constructor" is no push type
  if (!topic) return [400, 'MissingTopic'];
  const suffix = pushTypes[pushType];
  if (!topic.endsWith(suffix) || !topics.has(topic.slice(0, topic.length - suffix.length))) return [400, 'TopicDisallowed'];
  if (priority !== undefined && !['10', '5', '1'].includes(priority)) return [400, 'BadPriority'];
  if (pushType === 'background' && priority !== undefined && priority !== '5') return [400, 'BadPriority'];
  if (expiration !== undefined && !/^\d+$/.test(expiration)) return [400, 'BadExpirationDate'];
  // Node's http2 gives header values one character per byte (latin1): their latin1 length is the byte count.
  if (collapse !== undefined && Buffer.byteLength(collapse, 'latin1') > 64) return [400, 'BadCollapseId'];
  return null;
}

let answered = 0;
let sessionCount = 0;
let goawaySent = false;
let dropDone = false;
let heldCount = 0;
const holding = new Set();  // the connections holding requests for dropAfter
const sessions = new Set();
// The raw TCP socket of each connection by its remote port (a reset needs it: the http2 session
// only exposes a proxy of the TLS socket).
const rawSockets = new Map();

function setLimit(session, limit) {
  if (session.destroyed || session.closed) return;
  if (session.currentLimit === limit) return;
  session.currentLimit = limit;
  try { session.settings({ maxConcurrentStreams: limit }); } catch { /* session closing */ }
}
const limitFor = (session) => streamLimitOverride ?? (session.tokenValid ? maxStreams : initialStreams);

const server = http2.createSecureServer({
  key: fs.readFileSync(f('server.key')), cert: fs.readFileSync(f('server.pem')), ALPNProtocols: ['h2'],
  settings: { maxConcurrentStreams: initialStreams, initialWindowSize: 1 << 20 }, peerMaxConcurrentStreams: 2000,
  maxSessionMemory: 512,  // MB: 1000 streams of 1 KB bodies exceed Node's default of 10 (it then refuses streams)
});
server.on('connection', (raw) => {
  const key = raw.remotePort;
  rawSockets.set(key, raw);
  raw.on('close', () => { if (rawSockets.get(key) === raw) rawSockets.delete(key); });
});
function drop(session) {
  const raw = rawSockets.get(session.socket?.remotePort);
  if ((faults.dropKind ?? 'reset') === 'reset' && raw) raw.resetAndDestroy(); else session.destroy();
}
server.on('session', (session) => {
  session.id = ++sessionCount;
  session.answered = 0;
  session.currentLimit = initialStreams;
  session.tokenValid = false;
  session.tokens = new Map();
  session.lastStreamAllowed = Infinity;
  session.maxProcessed = 0;
  session.lastAuthorization = null;
  session.lastEntry = null;
  sessions.add(session);
  try { session.setLocalWindowSize(32 << 20); } catch { /* not connected yet */ }
  session.on('close', () => sessions.delete(session));
  session.on('error', () => {});
});
const ignore = () => {};
const hasRates = !!(faults.rate500 || faults.rate503 || faults.rate429 || faults.rate410);
server.on('stream', (stream, h) => {
  // Only the body's length is needed (validation, the record): it is counted, not kept.
  stream.bytes = 0;
  stream.on('error', ignore);
  stream.on('data', countBytes);
  stream.on('end', () => requestEnded(stream, h));
});
function countBytes(chunk) { this.bytes += chunk.length; }

function requestEnded(stream, h) {
  const session = stream.session;
  if (!session) return;
  const path = h[':path'];
  const token = path.startsWith('/3/device/') ? path.slice(10) : '';
  const base = record && { t: Date.now(), session: session.id, stream: stream.id, token, apnsId: h['apns-id'] ?? null,
    collapseId: h['apns-collapse-id'] ?? null };
  if (stream.id > session.lastStreamAllowed) {  // above the GOAWAY's last stream id: not processed
    // Sending the GOAWAY made nghttp2 close these streams itself (REFUSED_STREAM); resetting
    // one again from here corrupted Node 20's heap (abort "corrupted size vs. prev_size").
    record?.write(recordLine(base, ',"refused":"goaway"'));
    return;
  }
  if (stream.id > session.maxProcessed) session.maxProcessed = stream.id;
  let planned;
  if (script.size > 0) {
    const n = (attemptsByToken.get(token) ?? 0);
    attemptsByToken.set(token, n + 1);
    planned = script.get(token)?.[n];
  }
  if (planned?.refuse || (!planned && faults.refusedRate && random() < faults.refusedRate)) {
    record?.write(recordLine(base, ',"refused":"stream"'));
    stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
    return;
  }
  const byteCount = stream.bytes;
  let answer = validate(h, token, byteCount, session);
  if (!answer && planned?.status) answer = [planned.status, planned.reason, planned.timestamp];
  if (!answer && !planned && hasRates) {
    const r = random();
    let edge = 0;
    if (r < (edge += faults.rate500 ?? 0)) answer = [500, 'InternalServerError'];
    else if (r < (edge += faults.rate503 ?? 0)) answer = [503, 'ServiceUnavailable'];
    else if (r < (edge += faults.rate429 ?? 0)) answer = [429, 'TooManyRequests'];
    else if (r < (edge += faults.rate410 ?? 0)) { unregistered.set(token, Date.now() - 1000); answer = [410, 'Unregistered', Date.now() - 1000]; }
  }
  if (!answer && faults.dropAfter && !dropDone && session.answered > 0) {
    // Taken (APNs may deliver it) but never answered: the connection drops first.
    record?.write(recordLine(base, `,"status":200,"reason":null,"unanswered":true,"bytes":${byteCount}`));
    heldCount += 1;
    holding.add(session);
    if (heldCount >= faults.dropAfter) { dropDone = true; for (const s of holding) drop(s); }
    return;
  }
  const auth = answer && (answer[1].endsWith('ProviderToken') || answer[1] === 'TooManyProviderTokenUpdates');
  if (!answer || !auth) { if (!session.tokenValid) { session.tokenValid = true; setLimit(session, limitFor(session)); } }
  else if (answer[0] === 403) { session.tokenValid = false; setLimit(session, limitFor(session)); }
  const delay = planned?.delayMs ?? faults.delayMs ?? 0;
  if (delay > 0) setTimeout(() => respond(stream, h, session, base, answer, planned, byteCount), delay);
  else respond(stream, h, session, base, answer, planned, byteCount);
}

function respond(stream, h, session, base, answer, planned, byteCount) {
  if (stream.destroyed || stream.closed) return;
  const status = answer ? answer[0] : 200;
  if (record) {
    const pushType = h['apns-push-type'], topic = h['apns-topic'], priority = h['apns-priority'], expiration = h['apns-expiration'];
    record.write(recordLine(base, `,"status":${status},"reason":${answer ? q(answer[1]) : 'null'},"pushType":${q(pushType ?? null)}` +
      `,"topic":${q(topic ?? null)},"priority":${q(priority ?? null)},"expiration":${q(expiration ?? null)},"bytes":${byteCount}`));
  }
  const apnsId = h['apns-id'] ?? crypto.randomUUID();
  if (answer) {
    const headers = { ':status': status, 'apns-id': apnsId, 'content-type': 'application/json' };
    if (planned?.retryAfter !== undefined) headers['retry-after'] = String(planned.retryAfter);
    stream.respond(headers);
    stream.end(answer[0] === 410 ? `{"reason":${q(answer[1])},"timestamp":${Number(answer[2])}}` : `{"reason":${q(answer[1])}}`);
  } else {
    stream.respond({ ':status': 200, 'apns-id': apnsId, 'apns-unique-id': crypto.randomUUID() }, { endStream: true });
  }
  answered += 1;
  session.answered += 1;
  if (faults.streamLimits) {
    for (const [after, limit] of faults.streamLimits) {
      if (answered === after) { streamLimitOverride = limit; for (const s of sessions) setLimit(s, limitFor(s)); }
    }
  }
  if (faults.goawayAfter && !goawaySent && answered >= faults.goawayAfter) {
    goawaySent = true;
    // The last stream id covers every stream taken up so far (answered or pending): the
    // client may resend only streams above it, which this session will not process.
    session.lastStreamAllowed = session.maxProcessed;
    session.goaway(http2.constants.NGHTTP2_NO_ERROR, session.maxProcessed,
      Buffer.from(JSON.stringify({ reason: faults.goawayReason ?? 'Shutdown' })));
    setTimeout(() => session.close(), 2000).unref();
  }
}
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port} ${f('ca.pem')}\n`);
});
const stop = () => { record?.end(); server.close(); fs.rmSync(dir, { recursive: true, force: true }); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
if (!args.includes('--detached')) {  // the parent went away: its pipe to our stdin closed
  process.stdin.on('end', stop);
  process.stdin.resume();
}
