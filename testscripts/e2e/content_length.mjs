// content_length.mjs: a minimal MCP client without the SDK that speaks
// LSP-style Content-Length framing to `atm-agent-mcp serve` (which must
// answer in the framing the client used): initialize, tools/list, one codex
// turn against the real Codex CLI. Every byte the proxy writes to stdout
// must be part of a Content-Length framed JSON-RPC message.
//
// Run by testscripts/node_e2e_test.go with the environment of lib.mjs config().

import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { check, config, equal, fail, log, step, waitFor, watchdog, whenFailing } from './lib.mjs';

const cfg = config();
watchdog(cfg.timeoutMs);

const args = ['serve', '--team', cfg.team, '--identity', 'cl-proxy', '--codex-bin', cfg.codexBin,
  '--backend', cfg.backend, '--approval-policy', 'never', '--log-level', 'debug',
  '--log-file', join(cfg.logDir, 'proxy-content-length.log')];
log(`spawn ${cfg.bin} ${args.join(' ')}`);
const child = spawn(cfg.bin, args, { cwd: cfg.work, env: process.env, stdio: ['pipe', 'pipe', 'pipe'] });
let exit = null;
child.on('exit', (code, signal) => { exit = { code, signal }; });
child.on('error', (e) => fail(`spawn: ${e}`));
child.stderr.on('data', (b) => {
  for (const line of String(b).split('\n')) if (line) process.stdout.write(`[stderr] ${line}\n`);
});

// The reader: every stdout byte must belong to a frame
// "Content-Length: N\r\n(other headers\r\n)*\r\n" + N bytes of JSON.
let raw = Buffer.alloc(0);
const messages = [];
const frames = [];
child.stdout.on('data', (chunk) => {
  raw = Buffer.concat([raw, chunk]);
  for (;;) {
    const end = raw.indexOf('\r\n\r\n');
    if (end < 0) {
      // A header still coming must at least start like one.
      const start = raw.toString('latin1', 0, Math.min(raw.length, 15)).toLowerCase();
      check('content-length:'.startsWith(start) && raw.length < 4096,
        () => `stdout is not Content-Length framed: ${JSON.stringify(raw.toString().slice(0, 200))}`);
      return;
    }
    const head = raw.toString('latin1', 0, end);
    const lines = head.split('\r\n');
    check(/^Content-Length: \d+$/i.test(lines[0]), () => `frame does not start with Content-Length: ${JSON.stringify(head)}`);
    for (const h of lines.slice(1)) check(/^[A-Za-z-]+: .+$/.test(h), () => `bad header line ${JSON.stringify(h)}`);
    const n = Number(lines[0].split(':')[1]);
    if (raw.length < end + 4 + n) return;
    const body = raw.subarray(end + 4, end + 4 + n).toString('utf8');
    raw = raw.subarray(end + 4 + n);
    let msg;
    try {
      msg = JSON.parse(body);
    } catch (e) {
      fail(`a frame body is not JSON (${e}): ${body.slice(0, 200)}`);
    }
    equal(msg.jsonrpc, '2.0', 'jsonrpc of a framed message');
    frames.push(head);
    messages.push(msg);
  }
});

whenFailing(() => {
  process.stdout.write(`--- last messages (${messages.length} in all):\n`);
  for (const m of messages.slice(-15)) {
    const line = JSON.stringify(m);
    process.stdout.write(`<- ${line.length > 600 ? line.slice(0, 600) + '…' : line}\n`);
  }
  if (raw.length) process.stdout.write(`unparsed stdout: ${JSON.stringify(raw.toString().slice(0, 300))}\n`);
  child.kill('SIGKILL');
});

function write(msg) {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
  child.stdin.write(body);
}

let nextId = 1;
async function request(method, params, timeoutMs = 60000) {
  const id = nextId++;
  write({ jsonrpc: '2.0', id, method, params });
  return waitFor(`the answer to ${method} (id ${id})`,
    () => messages.find((m) => m.id === id && ('result' in m || 'error' in m)), timeoutMs, 20);
}

await step('initialize (Content-Length framed)', async () => {
  const r = await request('initialize', {
    protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'atm-e2e-content-length', version: '1.0.0' },
  }, 30000);
  check(!r.error, () => `initialize error: ${JSON.stringify(r.error)}`);
  equal(r.result.protocolVersion, '2025-06-18', 'protocolVersion');
  check(r.result.serverInfo && r.result.serverInfo.name, 'no serverInfo');
  check(r.result.capabilities && r.result.capabilities.tools, 'no tools capability');
  write({ jsonrpc: '2.0', method: 'notifications/initialized' });
});

await step('tools/list', async () => {
  const r = await request('tools/list', {});
  check(!r.error, () => `tools/list error: ${JSON.stringify(r.error)}`);
  const names = r.result.tools.map((t) => t.name);
  for (const want of ['codex', 'codex-reply', 'atm_send', 'atm_read', 'atm_broadcast', 'atm_pending_count',
    'agent_sessions', 'agent_status', 'agent_close']) {
    check(names.includes(want), () => `tool ${want} missing from ${JSON.stringify(names)}`);
  }
});

await step('codex turn against the real Codex', async () => {
  const r = await request('tools/call', {
    name: 'codex', arguments: { prompt: 'hello over content-length', identity: 'qa', cwd: cfg.work },
  });
  check(!r.error, () => `codex error: ${JSON.stringify(r.error)}`);
  check(!r.result.isError, () => `codex isError: ${JSON.stringify(r.result)}`);
  const sc = r.result.structuredContent;
  equal(sc.content, 'MOCK_REPLY: hello over content-length', 'reply');
  equal(sc.identity, 'qa', 'identity');
  check(typeof sc.agent_id === 'string' && sc.agent_id !== '', 'no agent_id');
  check(r.result.content.some((c) => c.type === 'text' && c.text.includes('MOCK_REPLY: hello over content-length')),
    'the reply is not in content');
});

await step('stdin EOF: clean exit, nothing unframed on stdout', async () => {
  child.stdin.end();
  await waitFor('the proxy to exit', () => exit, 20000, 50);
  equal(exit.signal, null, 'exit signal');
  equal(exit.code, 0, 'exit code');
  await new Promise((resolve) => (child.stdout.readableEnded ? resolve() : child.stdout.once('end', resolve)));
  equal(raw.length, 0, 'bytes left after the last frame');
  check(messages.length >= 3, `only ${messages.length} framed messages`);
  log(`${messages.length} Content-Length framed messages (headers like ${JSON.stringify(frames[0])})`);
});

log('PASS content_length.mjs');
process.exit(0);
