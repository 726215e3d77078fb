#!/usr/bin/env node
// PushSeal benchmark peer (Node `crypto`): the same full open job as push-bench's OpenBench —
// APNs payload bytes in, notification out: JSON.parse, check the three sealed fields, base64
// decode, AES-256-GCM open (createDecipheriv, setAAD `pushseal:v1|<enc_alg>|<key_id>|<app_id>`,
// setAuthTag, update, final), JSON.parse of the plaintext, check the text members.
// Prints `RESULT impl=node op=fullopen size=<bytes> rep=<n> n=<iterations> ns=<ns per op>`.
// Usage: node open_peer.js [--quick] [--n N --warmup W --reps R] DIR
//        (DIR holds key.hex and payload-<size>.json, from push-bench)
//        node open_peer.js --once FILE
//        (single shot for push-bench's cold start: open one payload with the key in key.hex beside
//        FILE and print {"outcome", "title", "subtitle", "body"}; interpreter start included)
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const APP_ID = 'com.example.app';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function fullOpen(key, raw) {
  const p = JSON.parse(raw);
  if (p === null || typeof p !== 'object' || Array.isArray(p)) throw new Error('payload is not an object');
  const data = p.encrypted_data, keyID = p.key_id, alg = p.enc_alg;
  for (const f of [data, keyID, alg]) if (typeof f !== 'string' || f.length === 0) throw new Error('sealed fields');
  if (alg !== 'A256GCM') throw new Error('enc_alg');
  if (!BASE64.test(data)) throw new Error('base64');
  const box = Buffer.from(data, 'base64');
  if (box.length < 28) throw new Error('truncated box');
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, box.subarray(0, 12));
  decipher.setAAD(Buffer.from(`pushseal:v1|${alg}|${keyID}|${APP_ID}`));
  decipher.setAuthTag(box.subarray(box.length - 16));
  const plain = Buffer.concat([decipher.update(box.subarray(12, box.length - 16)), decipher.final()]);
  const n = JSON.parse(plain.toString('utf8'));
  if (n === null || typeof n !== 'object' || Array.isArray(n)) throw new Error('plaintext is not an object');
  for (const k of ['title', 'subtitle', 'body', 'id']) {
    if (n[k] !== undefined && n[k] !== null && typeof n[k] !== 'string') throw new Error(k);
  }
  if (!(n.title || n.subtitle || n.body)) throw new Error('blank');
  return n;
}

function once(file) {
  const key = Buffer.from(fs.readFileSync(path.join(path.dirname(path.resolve(file)), 'key.hex'), 'utf8').trim(), 'hex');
  const n = fullOpen(key, fs.readFileSync(file));
  console.log(JSON.stringify({ outcome: 'decrypted', title: n.title ?? null, subtitle: n.subtitle ?? null, body: n.body ?? null }));
}

function main() {
  const onceAt = process.argv.indexOf('--once');
  if (onceAt >= 0) return once(process.argv[onceAt + 1]);
  const quick = process.argv.includes('--quick');
  const settings = {};
  const args = [];
  for (let i = 2; i < process.argv.length; i++) {
    const a = process.argv[i];
    if (a === '--n' || a === '--warmup' || a === '--reps') { settings[a] = Number(process.argv[++i]); continue; }
    if (a !== '--quick') args.push(a);
  }
  if (args.length !== 1) { console.error('usage: node open_peer.js [--quick] [--n N --warmup W --reps R] DIR'); process.exit(64); }
  const dir = args[0];
  let [iterations, warmup, reps] = quick ? [5000, 500, 3] : [20000, 5000, 11];
  [iterations, warmup, reps] = [settings['--n'] ?? iterations, settings['--warmup'] ?? warmup, settings['--reps'] ?? reps];
  const key = Buffer.from(fs.readFileSync(path.join(dir, 'key.hex'), 'utf8').trim(), 'hex');
  for (const size of [256, 1024, 2048]) {
    const raw = fs.readFileSync(path.join(dir, `payload-${size}.json`));
    if (fullOpen(key, raw).title !== 'Dinner plans') { console.error(`payload-${size}.json does not open`); process.exit(65); }
    for (let i = 0; i < warmup; i++) fullOpen(key, raw);
    for (let rep = 0; rep < reps; rep++) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < iterations; i++) fullOpen(key, raw);
      const ns = Number(process.hrtime.bigint() - start) / iterations;
      console.log(`RESULT impl=node op=fullopen size=${size} rep=${rep} n=${iterations} ns=${ns.toFixed(1)}`);
    }
  }
}

main();
