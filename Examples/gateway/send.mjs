#!/usr/bin/env node
// Sending through push-gateway from Node: built-in fetch (Node 18+), no npm package.
//
//   PUSHSEAL_API_KEY=psk_... node send.mjs http://127.0.0.1:8080 RECIPIENT...
//
// POST /v1/notifications with one notification per recipient (202 = committed to the outbox),
// then GET /v1/notifications/{id} until each is final. Prints one JSON line per recipient:
// recipient, id, final status (or the item's error: the others still go; exit 1 at the end). The
// API key comes from the environment, never the command line.
//
// Idempotency: every send has a key (PUSHSEAL_IDEMPOTENCY_KEY, else a new random one, printed on
// stderr). To retry a send whose answer was lost, run it again with the same recipients and
// PUSHSEAL_IDEMPOTENCY_KEY set to that key: the gateway answers as the first time and enqueues
// nothing twice. In your backend, store the key with the message it sends before the first try.
import { randomUUID } from 'node:crypto';

const FINAL = new Set(['accepted', 'unregistered', 'rejected', 'failed', 'expired', 'cancelled']);

const [gateway, ...recipients] = process.argv.slice(2);
const key = process.env.PUSHSEAL_API_KEY;
if (!gateway || recipients.length === 0 || !key) {
  console.error('send.mjs: error: usage: PUSHSEAL_API_KEY=psk_... node send.mjs GATEWAY_URL RECIPIENT...');
  process.exit(64);
}

async function call(method, path, body, headers = {}) {
  const response = await fetch(gateway.replace(/\/$/, '') + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  // A proxy in front of the gateway may answer with HTML or nothing: read text, then parse.
  const text = await response.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${response.status} from ${path}, not JSON: ${text.slice(0, 120).replace(/\s+/g, ' ')}`);
  }
  if (!response.ok) throw new Error(`HTTP ${response.status} ${answer.error?.code}: ${answer.error?.message}`);
  return answer;
}

// One line on stderr and exit 1 for any failure (no stack trace): the gateway unreachable, an
// error answer, or notifications not final in time.
process.on('uncaughtException', (e) => {
  console.error(`send.mjs: error: ${e.cause?.message ?? e.message}`);
  process.exit(1);
});

const items = recipients.map((recipient) => ({
  recipient,
  notification: { title: 'From Node', body: `A second message for ${recipient}` },
  ttl: 3600,
}));
const request = { notifications: items };
const idempotencyKey = process.env.PUSHSEAL_IDEMPOTENCY_KEY ?? `node-${randomUUID()}`;
console.error(`send.mjs: idempotency key ${idempotencyKey} (to retry this send: PUSHSEAL_IDEMPOTENCY_KEY=${idempotencyKey})`);
const sent = await call('POST', '/v1/notifications', request, { 'Idempotency-Key': idempotencyKey });
const ids = new Map();
let refused = 0;
for (const item of sent.notifications) {
  if (item.error) {
    // Per-item errors (unknown recipient, no device token, too large …) do not fail the others.
    refused += 1;
    console.log(JSON.stringify({ recipient: item.recipient, error: item.error }));
  } else {
    ids.set(item.id, item.recipient);
  }
}

const deadline = Date.now() + 60_000;
const pending = new Set(ids.keys());
while (pending.size > 0) {
  for (const id of [...pending]) {
    const state = await call('GET', `/v1/notifications/${id}`);
    if (FINAL.has(state.status)) {
      pending.delete(id);
      console.log(JSON.stringify({ recipient: ids.get(id), id, status: state.status, apnsId: state.apnsId }));
    }
  }
  if (pending.size > 0) {
    if (Date.now() > deadline) throw new Error(`${pending.size} notifications not final after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
if (refused > 0) {
  console.error(`send.mjs: error: ${refused} of ${items.length} notifications were refused (their lines above)`);
  process.exit(1);
}
