#!/usr/bin/env node
// PushSeal benchmark peer (Node `crypto`): the same full seal job as push-bench's SenderBench —
// notification JSON in, APNs payload bytes out: JSON.parse, validate, add iat, compact
// JSON.stringify, Padmé padding, AES-256-GCM with a fresh random 12-byte nonce and AAD
// `pushseal:v1|A256GCM|<key_id>|<app_id>`, base64, payload.
// Prints `RESULT impl=node op=fullseal size=<bytes> rep=<n> n=<iterations> ns=<ns per op>`.
// Also the crypto core alone (`op=seal`: fresh nonce + createCipheriv/setAAD/update/final/
// getAuthTag on a `size`-byte plaintext, like push-bench's CryptoBench) and a batch mode:
// `--batch KEY.hex` reads push-seal batch's JSON Lines ({"recipient", "notification"}) on stdin
// and writes one {"recipient", "payload", "headers"} line per input line, sealing with the fixed
// key (no keychain).
// Usage: node seal_peer.js [--quick] [--n N --warmup W --reps R]  |  node seal_peer.js --batch KEY.hex
'use strict';
const crypto = require('crypto');

const APP_ID = 'com.example.app';
const KEY_ID = 'key-1';
const AAD = Buffer.from(`pushseal:v1|A256GCM|${KEY_ID}|${APP_ID}`);
const PREFIX = Buffer.from('{"aps":{"alert":{"title":"New message","body":"Open the app to read it"},"mutable-content":1},"encrypted_data":"');
const SUFFIX = Buffer.from(`","key_id":"${KEY_ID}","enc_alg":"A256GCM"}`);
const FIELDS = ['title', 'subtitle', 'body', 'media', 'localizations', 'data', 'iat', 'exp', 'id'];

function notification(size) {
  const head = '{"title":"Dinner plans","body":"', tail = '","id":"bench-1"}';
  return Buffer.from(head + 'x'.repeat(Math.max(0, size - head.length - tail.length)) + tail);
}

function padme(n) {
  if (n < 2) return n;
  const e = 31 - Math.clz32(n);
  const s = 32 - Math.clz32(e);
  const mask = (1 << (e - s)) - 1;
  return (n + mask) & ~mask;
}

function fullSeal(key, raw) {
  return sealNotification(key, JSON.parse(raw.toString('utf8')));
}

function sealNotification(key, n) {
  if (n === null || typeof n !== 'object' || Array.isArray(n)) throw new Error('not an object');
  for (const k of ['title', 'subtitle', 'body', 'id']) {
    if (k in n && typeof n[k] !== 'string') throw new Error(k);
  }
  if (!(n.title || n.subtitle || n.body)) throw new Error('empty');
  if (!('iat' in n)) n.iat = Math.floor(Date.now() / 1000);
  const ordered = {};
  for (const k of FIELDS) if (k in n) ordered[k] = n[k];
  let plain = Buffer.from(JSON.stringify(ordered));
  const padded = padme(plain.length);
  if (padded > plain.length) plain = Buffer.concat([plain, Buffer.alloc(padded - plain.length, 0x20)]);
  const nonce = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(AAD);
  const ct = Buffer.concat([cipher.update(plain), cipher.final()]);
  const box = Buffer.concat([nonce, ct, cipher.getAuthTag()]);
  const payload = Buffer.concat([PREFIX, Buffer.from(box.toString('base64')), SUFFIX]);
  if (payload.length > 4096) throw new Error('too large');
  return payload;
}

function coreSeal(key, plain) {
  const nonce = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(AAD);
  return Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
}

function batch(keyFile) {
  const key = Buffer.from(require('fs').readFileSync(keyFile, 'utf8').trim(), 'hex');
  const headers = `"headers":{"apns-push-type":"alert","apns-topic":"${APP_ID}","apns-priority":"10"}}\n`;
  const rl = require('readline').createInterface({ input: process.stdin, crlfDelay: Infinity });
  let out = [];
  let outBytes = 0;
  const flush = (done) => {
    const chunk = out.join('');
    out = [];
    outBytes = 0;
    return process.stdout.write(chunk, done);
  };
  rl.on('line', (line) => {
    const item = JSON.parse(line);
    const payload = sealNotification(key, item.notification);
    const text = `{"recipient":${JSON.stringify(item.recipient)},"payload":${payload.toString('utf8')},${headers}`;
    out.push(text);
    outBytes += text.length;
    if (outBytes > (1 << 20) && !flush()) {
      rl.pause();
      process.stdout.once('drain', () => rl.resume());
    }
  });
  rl.on('close', () => flush());
}

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

if (process.argv.includes('--batch')) {
  batch(process.argv[process.argv.indexOf('--batch') + 1]);
} else {
  const quick = process.argv.includes('--quick');
  let [iterations, warmup, reps] = quick ? [5000, 500, 3] : [20000, 5000, 11];
  [iterations, warmup, reps] = [option('--n', iterations), option('--warmup', warmup), option('--reps', reps)];
  const key = crypto.randomBytes(32);
  for (const size of [256, 1024, 2048]) {
    const raw = notification(size);
    if (raw.length !== size) throw new Error('input size');
    const plain = crypto.randomBytes(size);
    for (const [op, job, arg] of [['seal', coreSeal, plain], ['fullseal', fullSeal, raw]]) {
      for (let i = 0; i < warmup; i++) job(key, arg);
      for (let rep = 0; rep < reps; rep++) {
        const start = process.hrtime.bigint();
        for (let i = 0; i < iterations; i++) job(key, arg);
        const ns = Number(process.hrtime.bigint() - start) / iterations;
        console.log(`RESULT impl=node op=${op} size=${size} rep=${rep} n=${iterations} ns=${ns.toFixed(1)}`);
      }
    }
  }
}
