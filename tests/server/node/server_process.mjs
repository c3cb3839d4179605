// Starting and stopping `ferrite serve` for the SDK tests, and locating the
// shared test data (the convention of tests/support/test_data.h).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '../../..');

// The server binary: $FERRITE_BINARY (set by ctest), else the default build.
export function ferriteBinary() {
  return process.env.FERRITE_BINARY || path.join(REPO, 'build', 'ferrite');
}

export function sharedRoot() {
  return process.env.FERRITE_SHARED || path.join(REPO, '..', 'shared');
}

export const inCi = () => (process.env.CI || '').toLowerCase() === 'true';

// The shared file, or null when it is missing outside CI (the caller skips);
// in CI a missing file throws.
export function sharedFile(rel) {
  const p = path.join(sharedRoot(), rel);
  if (existsSync(p)) return p;
  if (inCi()) throw new Error(`shared test data missing: ${p}`);
  return null;
}

// Seconds a server may take to come up (sanitizer builds load slowly).
const STARTUP_TIMEOUT_MS = 120_000;
// Pause between two /health polls.
const POLL_INTERVAL_MS = 50;
const STOP_TIMEOUT_MS = 30_000;

const LISTEN_LINE = /serving .* on http:\/\/([^:\s]+):(\d+)/;

// Starts `ferrite serve -m model ...args` on a free loopback port (port 0:
// the port is read from the server's log) and waits until /health answers.
export async function startServer(model, args = []) {
  const child = spawn(ferriteBinary(), ['serve', '-m', model, '--host', '127.0.0.1', '--port', '0',
    '--log-format', 'none', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line within ${STARTUP_TIMEOUT_MS} ms:\n${log}`)),
      STARTUP_TIMEOUT_MS);
    child.stderr.on('data', (chunk) => {
      log += chunk.toString();
      const m = LISTEN_LINE.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[2]));
      }
    });
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`ferrite serve exited (${code ?? signal}) before listening:\n${log}`));
    });
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    try {
      const r = await fetch(`${base}/health`);
      if (r.ok) break;
    } catch {
      // not accepting yet
    }
    if (Date.now() > deadline) throw new Error(`${base}/health did not answer:\n${log}`);
    await new Promise((r) => setTimeout(r, POLL_INTERVAL_MS));
  }
  return {
    base,
    port,
    log: () => log,
    // SIGTERM, then the exit status (the server exits 0 on SIGTERM).
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}
