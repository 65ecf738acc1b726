// Shared helpers of the end-to-end clients: the environment contract with
// testscripts/node_e2e_test.go, named steps that stop the script at the
// first failure, polling, and the loopback model's request log.

import { readFileSync } from 'node:fs';

/** need returns the environment variable name, or fails when it is unset. */
export function need(name) {
  const v = process.env[name];
  if (v === undefined || v === '') {
    fail(`environment: ${name} is not set (the Go test TestNodeClient sets it)`);
  }
  return v;
}

/**
 * config is what the Go test passes: the proxy binary, the Codex binary and
 * backend, the team, the threads' work dir, the model mock's JSONL request
 * log and the ATM home (inboxes and the proxy's state).
 */
export function config() {
  return {
    bin: need('ATM_E2E_BIN'),
    codexBin: need('ATM_E2E_CODEX_BIN'),
    backend: need('ATM_E2E_BACKEND'),
    team: need('ATM_E2E_TEAM'),
    work: need('ATM_E2E_WORK'),
    modelLog: need('ATM_E2E_MODEL_LOG'),
    logDir: need('ATM_E2E_LOG_DIR'),
    atmHome: need('ATM_HOME'),
    timeoutMs: Number(process.env.ATM_E2E_TIMEOUT_MS || 120000),
  };
}

const started = Date.now();
let current = '(start)';
const onFail = [];

/** log prints one line with the time since start. */
export function log(msg) {
  const s = ((Date.now() - started) / 1000).toFixed(2).padStart(6);
  process.stdout.write(`[${s}s] ${msg}\n`);
}

/** whenFailing registers a callback that prints diagnostics on failure. */
export function whenFailing(fn) {
  onFail.push(fn);
}

/** fail prints the step that failed and why, then exits 1. */
export function fail(msg) {
  process.stdout.write(`FAIL step "${current}": ${msg}\n`);
  for (const fn of onFail) {
    try {
      fn();
    } catch (e) {
      process.stdout.write(`(diagnostics failed: ${e})\n`);
    }
  }
  process.exit(1);
}

/** check fails the current step unless cond holds. */
export function check(cond, msg) {
  if (!cond) fail(typeof msg === 'function' ? msg() : msg);
}

/** equal fails the current step unless got === want. */
export function equal(got, want, what) {
  check(got === want, () => `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

/** step runs one named step; an exception fails the script. */
export async function step(name, fn) {
  current = name;
  const t0 = Date.now();
  let result;
  try {
    result = await fn();
  } catch (e) {
    fail(e && e.stack ? e.stack : String(e));
  }
  log(`ok   ${name} (${Date.now() - t0} ms)`);
  return result;
}

/** watchdog fails the script when it runs longer than ms. */
export function watchdog(ms) {
  setTimeout(() => fail(`the script did not finish within ${ms} ms`), ms).unref();
}

/**
 * waitFor polls fn (sync or async) until it returns a truthy value, which
 * it returns; after timeoutMs it fails with what().
 */
export async function waitFor(what, fn, timeoutMs = 30000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * modelRequests returns the requests the loopback model received so far,
 * parsed from its JSONL log: {n, path, body} with body the Responses API
 * request (body.input is what the model was given).
 */
export function modelRequests(path) {
  let text;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return [];
    throw e;
  }
  const out = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // A line being written right now: the next poll reads it whole.
    }
  }
  return out;
}

/** inputText is everything a model request gave the model, as one string. */
export function inputText(req) {
  const b = req.body || {};
  return JSON.stringify([b.instructions ?? '', b.input ?? []]);
}

/** requestsWith returns the model requests whose input contains every text. */
export function requestsWith(path, ...texts) {
  return modelRequests(path).filter((r) => {
    const s = inputText(r);
    return texts.every((t) => s.includes(JSON.stringify(t).slice(1, -1)));
  });
}

/** textOf joins the text items of a tool result's content. */
export function textOf(result) {
  return (result.content || [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}
