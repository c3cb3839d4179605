#!/usr/bin/env node
// Load generator for `ferrite serve` (or any OpenAI-compatible server); Node
// 18+, no packages. For each concurrency level, N clients each send streamed
// /v1/completions requests back to back for a fixed duration (or until a
// request count is reached) and the run reports:
//   requests/s, output tokens/s (usage.completion_tokens over wall time),
//   time to first token (request sent -> first text chunk) p50/p90/p99,
//   inter-token latency (gap between text chunks, divided by the tokens the
//   later chunk carries when usage says a chunk held several) p50/p90/p99,
// and the aggregate speedup (output tokens/s) of each level over 1 client.
//
//   node bench/server_load.mjs --url http://127.0.0.1:8080 --clients 1,8,32 \
//        --duration 20 --max-tokens 64 [--requests N] [--prompt TEXT] [--json]
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080' },
    clients: { type: 'string', default: '1,8,32' },
    duration: { type: 'string', default: '20' }, // seconds per level
    requests: { type: 'string', default: '0' }, // per level; 0: duration bound
    'max-tokens': { type: 'string', default: '64' },
    prompt: { type: 'string', default: 'Once upon a time' },
    'api-key': { type: 'string', default: '' },
    json: { type: 'boolean', default: false },
  },
});

const levels = opt.clients.split(',').map(Number);
if (levels.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--clients: comma-separated positive integers');
const durationMs = Number(opt.duration) * 1000;
const maxRequests = Number(opt.requests);
const maxTokens = Number(opt['max-tokens']);

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

// One streamed completion; returns its timings (ms) and token count.
async function oneRequest(clientIndex, requestIndex) {
  const headers = { 'Content-Type': 'application/json' };
  if (opt['api-key']) headers.Authorization = `Bearer ${opt['api-key']}`;
  const body = JSON.stringify({
    // A distinct prompt per client so slots do not share a cached prefix.
    prompt: `${opt.prompt} ${clientIndex}.${requestIndex}`,
    max_tokens: maxTokens,
    temperature: 0.8,
    seed: clientIndex * 100003 + requestIndex,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  });
  const t0 = performance.now();
  const res = await fetch(`${opt.url}/v1/completions`, { method: 'POST', headers, body });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const decoder = new TextDecoder();
  let buffer = '';
  const arrivals = []; // time of each chunk that carried text
  let tokens = 0;
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        const data = line.slice(6);
        if (data === '[DONE]') continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(`stream error: ${JSON.stringify(j.error)}`);
        if (j.choices?.length && j.choices[0].text) arrivals.push(performance.now());
        if (j.usage) tokens = j.usage.completion_tokens;
      }
    }
  }
  const t1 = performance.now();
  const ttft = arrivals.length ? arrivals[0] - t0 : NaN;
  const gaps = [];
  // Chunks carry one token each unless a multi-byte character was split.
  const perChunk = arrivals.length > 1 ? Math.max(1, (tokens - 1) / (arrivals.length - 1)) : 1;
  for (let i = 1; i < arrivals.length; ++i) gaps.push((arrivals[i] - arrivals[i - 1]) / perChunk);
  return { ttft, gaps, tokens, total: t1 - t0 };
}

async function runLevel(n) {
  const start = performance.now();
  const deadline = start + durationMs;
  let issued = 0;
  const results = [];
  const errors = [];
  async function client(c) {
    for (let r = 0; ; ++r) {
      if (maxRequests > 0 ? issued >= maxRequests : performance.now() >= deadline) return;
      ++issued;
      try {
        results.push(await oneRequest(c, r));
      } catch (e) {
        errors.push(String(e.message || e));
        if (errors.length > 10 * n) return;
      }
    }
  }
  await Promise.all(Array.from({ length: n }, (_, c) => client(c)));
  const wall = (performance.now() - start) / 1000;
  const ttfts = results.map((r) => r.ttft).filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  const itls = results.flatMap((r) => r.gaps).sort((a, b) => a - b);
  const tokens = results.reduce((s, r) => s + r.tokens, 0);
  return {
    clients: n,
    requests: results.length,
    errors: errors.length,
    first_error: errors[0] ?? null,
    wall_s: wall,
    requests_per_s: results.length / wall,
    output_tokens_per_s: tokens / wall,
    ttft_ms: { p50: percentile(ttfts, 50), p90: percentile(ttfts, 90), p99: percentile(ttfts, 99) },
    itl_ms: { p50: percentile(itls, 50), p90: percentile(itls, 90), p99: percentile(itls, 99) },
  };
}

const health = await fetch(`${opt.url}/health`).catch((e) => { throw new Error(`${opt.url}: ${e.cause?.message ?? e}`); });
if (!health.ok) throw new Error(`${opt.url}/health: HTTP ${health.status}`);
const props = await fetch(`${opt.url}/props`).then((r) => (r.ok ? r.json() : {})).catch(() => ({}));

const rows = [];
for (const n of levels) {
  const row = await runLevel(n);
  rows.push(row);
  if (!opt.json) process.stderr.write(`${n} clients: ${row.requests} requests, ${row.errors} errors\n`);
}
const base = rows.find((r) => r.clients === 1);
for (const r of rows) r.speedup_vs_1 = base && base.output_tokens_per_s > 0 ? r.output_tokens_per_s / base.output_tokens_per_s : null;

if (opt.json) {
  console.log(JSON.stringify({ url: opt.url, model: props.model ?? null, slots: props.total_slots ?? null,
    max_tokens: maxTokens, duration_s: durationMs / 1000, rows }, null, 2));
} else {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  console.log(`model ${props.model ?? '?'}, ${props.total_slots ?? '?'} slots, ${maxTokens} tokens per request`);
  console.log('| clients | requests | req/s | out tok/s | TTFT p50/p90/p99 ms | ITL p50/p90/p99 ms | speedup vs 1 |');
  console.log('|---:|---:|---:|---:|---|---|---:|');
  for (const r of rows) {
    console.log(`| ${r.clients} | ${r.requests}${r.errors ? ` (+${r.errors} err)` : ''} | ${f(r.requests_per_s, 2)} | ` +
      `${f(r.output_tokens_per_s)} | ${f(r.ttft_ms.p50)} / ${f(r.ttft_ms.p90)} / ${f(r.ttft_ms.p99)} | ` +
      `${f(r.itl_ms.p50)} / ${f(r.itl_ms.p90)} / ${f(r.itl_ms.p99)} | ${f(r.speedup_vs_1, 2)}x |`);
  }
  for (const r of rows) if (r.first_error) console.log(`${r.clients} clients, first error: ${r.first_error}`);
}
