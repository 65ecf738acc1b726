// client.mjs: a real MCP client (the official TypeScript SDK, Client +
// StdioClientTransport) drives `atm-agent-mcp serve`, which drives the real
// Codex CLI against the loopback model, with real team-mail files.
//
// Run by testscripts/node_e2e_test.go (TestNodeClient), which passes the
// binaries, the team, the work dir and the model's request log in the
// environment (see lib.mjs config()). Every step is asserted; the first
// failure prints the step, the reason and the last wire messages, and exits 1.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestFormParamsSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import {
  check, config, equal, fail, log, requestsWith, sleep, step, textOf, waitFor, watchdog, whenFailing,
} from './lib.mjs';

const cfg = config();
watchdog(cfg.timeoutMs);

const TOOLS = ['codex', 'codex-reply', 'atm_send', 'atm_read', 'atm_broadcast', 'atm_pending_count',
  'agent_sessions', 'agent_status', 'agent_close'];
const CALL_TIMEOUT = 30000;

// The elicitation request as the proxy sends it: the standard form-mode
// params plus the proxy's own fields (agent_id, identity, command, ...).
// The SDK's schema would strip those, so the handler parses with a loose one.
const LooseElicitRequestSchema = ElicitRequestSchema.extend({ params: ElicitRequestFormParamsSchema.loose() });

/**
 * connect starts `atm-agent-mcp serve` with the SDK's stdio transport and
 * returns a session: the client, every message on the wire (both
 * directions, in order), the elicitations received, progress per request,
 * and the client's errors.
 */
async function connect(name, extraArgs) {
  const s = { name, wire: [], elicitations: [], progress: new Map(), errors: [], exit: null };
  const args = ['serve', '--team', cfg.team, '--identity', 'proxy', '--codex-bin', cfg.codexBin,
    '--backend', cfg.backend, '--approval-policy', 'on-request', '--log-level', 'debug',
    '--log-file', join(cfg.logDir, `proxy-${name}.log`), ...extraArgs];
  log(`spawn ${cfg.bin} ${args.join(' ')}`);
  const transport = new StdioClientTransport({
    command: cfg.bin, args, cwd: cfg.work, env: { ...process.env }, stderr: 'pipe',
  });
  transport.stderr.on('data', (b) => {
    for (const line of String(b).split('\n')) if (line) process.stdout.write(`[${name} stderr] ${line}\n`);
  });
  // Record the wire: outgoing through send, incoming through onmessage
  // (which the SDK's Protocol sets on connect).
  const send = transport.send.bind(transport);
  transport.send = (m, o) => {
    s.wire.push({ dir: '->', m });
    return send(m, o);
  };
  let inner;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => (inner ? (m, extra) => { s.wire.push({ dir: '<-', m }); inner(m, extra); } : undefined),
    set: (f) => { inner = f; },
  });
  const client = new Client({ name: 'atm-e2e-node', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.onerror = (e) => s.errors.push(String(e && e.message ? e.message : e));
  client.setRequestHandler(LooseElicitRequestSchema, async (req) => {
    const p = req.params;
    s.elicitations.push(p);
    const cmd = String(p.command ?? '');
    log(`elicitation: ${p.message}`);
    if (cmd.includes('accepted-cmd')) return { action: 'accept', content: {} };
    if (cmd.includes('declined-cmd')) return { action: 'decline', content: { reason: 'the e2e client says no' } };
    return { action: 'decline', content: { reason: 'unexpected approval in the e2e test' } };
  });
  whenFailing(() => {
    process.stdout.write(`--- last wire messages of ${name} (${s.wire.length} in all):\n`);
    for (const { dir, m } of s.wire.slice(-25)) {
      const line = JSON.stringify(m);
      process.stdout.write(`${dir} ${line.length > 600 ? line.slice(0, 600) + '…' : line}\n`);
    }
    if (s.errors.length) process.stdout.write(`client errors: ${s.errors.join(' | ')}\n`);
  });
  await client.connect(transport, { timeout: 30000 });
  const child = transport._process;
  check(child && child.pid, 'the transport has no child process after connect');
  child.once('exit', (code, signal) => { s.exit = { code, signal }; });
  s.client = client;
  s.transport = transport;
  s.pid = child.pid;
  return s;
}

/**
 * call makes one tools/call with a progress token (the SDK's onprogress)
 * and returns the result, which must not be an error. The SDK itself checks
 * structuredContent against the tool's outputSchema from tools/list.
 */
async function call(s, name, args) {
  const seen = [];
  const result = await s.client.callTool({ name, arguments: args }, undefined, {
    timeout: CALL_TIMEOUT,
    onprogress: (p) => seen.push(p),
  });
  // The request the SDK just sent for this call carries the progress token.
  const req = [...s.wire].reverse().find((w) => w.dir === '->' && w.m.method === 'tools/call' && w.m.params?.name === name
    && JSON.stringify(w.m.params.arguments) === JSON.stringify(args)
    && w.m.params?._meta?.progressToken !== undefined && !s.progress.has(w.m.params._meta.progressToken));
  check(req, `no tools/call ${name} with a progress token on the wire`);
  s.progress.set(req.m.params._meta.progressToken, { name, seen, id: req.m.id });
  check(!result.isError, () => `${name} returned an error: ${textOf(result)}`);
  return result;
}

/** sc returns the structuredContent of a result, which must be present. */
function sc(result, what) {
  check(result.structuredContent && typeof result.structuredContent === 'object',
    () => `${what}: no structuredContent in ${JSON.stringify(result).slice(0, 400)}`);
  return result.structuredContent;
}

/**
 * checkProgress asserts, per call made with a token, on the wire: at least
 * one progress notification for a codex turn, increasing progress values,
 * and none after the response. The SDK must have handed every one of them
 * to onprogress, except those it reported as "unknown token" because they
 * arrived in the same read as the response (the SDK dispatches
 * notifications a microtask late: modelcontextprotocol/typescript-sdk#2580);
 * any other SDK error fails.
 */
function checkProgress(s) {
  const raced = new Map(); // token → progress notifications the SDK dropped
  const other = [];
  for (const e of s.errors) {
    const m = /unknown token: (\{.*\})$/s.exec(e);
    if (!m) continue;
    const n = JSON.parse(m[1]);
    const t = n.params?.progressToken;
    raced.set(t, (raced.get(t) || 0) + 1);
    if (!s.progress.has(t)) other.push(e);
  }
  check(other.length === 0, () => `progress for tokens the client never sent: ${other.join(' | ')}`);
  let racedTotal = 0;
  for (const [token, { name, seen, id }] of s.progress) {
    const respAt = s.wire.findIndex((w) => w.dir === '<-' && w.m.id === id && ('result' in w.m || 'error' in w.m));
    check(respAt >= 0, `no response on the wire for ${name} (request id ${id})`);
    const isProgress = (w) => w.dir === '<-' && w.m.method === 'notifications/progress' && w.m.params?.progressToken === token;
    const late = s.wire.slice(respAt + 1).filter(isProgress);
    check(late.length === 0, () => `${late.length} progress notification(s) for ${name} (token ${token}) after its response: ${JSON.stringify(late[0].m)}`);
    const before = s.wire.slice(0, respAt).filter(isProgress).map((w) => w.m.params);
    if (name === 'codex' || name === 'codex-reply') {
      check(before.length > 0, `no progress notification for ${name} (token ${token})`);
    }
    for (let i = 1; i < before.length; i++) {
      check(before[i].progress > before[i - 1].progress, () => `progress for ${name} does not increase: ${JSON.stringify(before)}`);
    }
    const dropped = raced.get(token) || 0;
    racedTotal += dropped;
    equal(seen.length + dropped, before.length, `progress for ${name} (token ${token}): delivered to onprogress + dropped by the SDK race vs on the wire`);
  }
  const delivered = [...s.progress.values()].reduce((n, p) => n + p.seen.length, 0);
  check(delivered > 0, 'the SDK never called onprogress');
  log(`progress: ${s.progress.size} calls checked, ${delivered} delivered to onprogress; the SDK dropped ${racedTotal} progress notification(s) that came with their response (typescript-sdk#2580)`);
}

/** closeClient closes the SDK transport (stdin EOF) and waits for the proxy to exit. */
async function closeClient(s) {
  const t0 = Date.now();
  await s.client.close();
  await waitFor(`${s.name}: the proxy process to exit`, () => s.exit, 15000);
  log(`${s.name}: proxy exited (code ${s.exit.code}, signal ${s.exit.signal}) ${Date.now() - t0} ms after stdin EOF`);
  check(s.exit.signal === null, () => `${s.name}: the proxy was killed by ${s.exit.signal}: it did not exit within 2 s of stdin EOF, so the SDK signalled it`);
  equal(s.exit.code, 0, `${s.name}: proxy exit code`);
  const other = s.errors.filter((e) => !e.includes('Connection closed') && !e.includes('unknown token'));
  check(other.length === 0, () => `${s.name}: client errors: ${other.join(' | ')}`);
}

/**
 * isReply checks the mock model's answer to a prompt: it echoes the last
 * user text, which on later turns starts with the session context the
 * proxy injects into every turn.
 */
function isReply(content, prompt) {
  check(typeof content === 'string' && content.startsWith('MOCK_REPLY: ') && content.endsWith(prompt),
    () => `not the model's reply to ${JSON.stringify(prompt)}: ${JSON.stringify(content)}`);
}

function inboxPath(identity) {
  return join(cfg.atmHome, '.claude', 'teams', cfg.team, 'inboxes', `${identity}.json`);
}

function summaryPath(identity, threadId) {
  return join(cfg.atmHome, '.config', 'atm', 'agent-sessions', cfg.team, identity, threadId, 'summary.md');
}

// ---------------------------------------------------------------------------

log(`backend ${cfg.backend}, codex ${cfg.codexBin}`);
const nonce = Date.now().toString(36);
let a;

await step('initialize', async () => {
  a = await connect('first', []);
  const info = a.client.getServerVersion();
  check(info && info.name, () => `no serverInfo: ${JSON.stringify(info)}`);
  const caps = a.client.getServerCapabilities();
  check(caps && caps.tools, () => `server capabilities without tools: ${JSON.stringify(caps)}`);
  const init = a.wire.find((w) => w.dir === '<-' && w.m.result?.protocolVersion);
  check(init, 'no initialize result on the wire');
  log(`server ${info.name} ${info.version}, protocol ${init.m.result.protocolVersion}`);
});

await step('tools/list', async () => {
  const { tools } = await a.client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of TOOLS) check(names.includes(want), () => `tool ${want} missing from ${JSON.stringify(names)}`);
  for (const t of tools) check(t.inputSchema && t.inputSchema.type === 'object', `tool ${t.name} has no object inputSchema`);
});

let arch;
await step('codex as arch', async () => {
  const r = await call(a, 'codex', { prompt: `hello from the node client ${nonce}`, identity: 'arch', cwd: cfg.work });
  arch = sc(r, 'codex');
  check(typeof arch.agent_id === 'string' && arch.agent_id !== '', () => `no agent_id: ${JSON.stringify(arch)}`);
  check(typeof arch.threadId === 'string' && arch.threadId !== '', () => `no threadId: ${JSON.stringify(arch)}`);
  equal(arch.identity, 'arch', 'identity');
  equal(arch.content, `MOCK_REPLY: hello from the node client ${nonce}`, 'reply text');
  check(textOf(r).includes(`MOCK_REPLY: hello from the node client ${nonce}`), () => `content text: ${textOf(r)}`);
  check(requestsWith(cfg.modelLog, 'arch', `hello from the node client ${nonce}`).length > 0,
    'the model never got the first prompt with the session context');
});

await step('codex-reply by agent_id', async () => {
  const r = sc(await call(a, 'codex-reply', { agent_id: arch.agent_id, prompt: `second turn ${nonce}` }), 'codex-reply');
  equal(r.agent_id, arch.agent_id, 'agent_id');
  equal(r.threadId, arch.threadId, 'threadId');
  isReply(r.content, `second turn ${nonce}`);
});

let dev;
await step('dev-1 started while arch is in a slow turn (parallel sessions)', async () => {
  const slow = `SLOW=1 parallel turn ${nonce}`;
  const [d, r] = await Promise.all([
    call(a, 'codex', { prompt: `start dev-1 ${nonce}`, identity: 'dev-1', cwd: cfg.work }),
    call(a, 'codex-reply', { agent_id: arch.agent_id, prompt: slow }),
  ]);
  dev = sc(d, 'codex dev-1');
  const ar = sc(r, 'codex-reply arch');
  equal(dev.identity, 'dev-1', 'dev-1 identity');
  equal(dev.content, `MOCK_REPLY: start dev-1 ${nonce}`, 'dev-1 reply');
  check(dev.agent_id !== arch.agent_id, 'dev-1 got the agent_id of arch');
  check(dev.threadId !== arch.threadId, 'dev-1 got the thread of arch');
  isReply(ar.content, slow);
  equal(ar.threadId, arch.threadId, 'arch threadId');
  // Both requests were on the wire before either answer, and dev-1 was not
  // held up behind arch's slow turn.
  const at = (pred) => a.wire.findIndex(pred);
  const reqAt = (name) => at((w) => w.dir === '->' && w.m.method === 'tools/call' && w.m.params?.name === name
    && JSON.stringify(w.m.params.arguments).includes(nonce) && (name === 'codex' ? w.m.params.arguments.identity === 'dev-1' : w.m.params.arguments.prompt === slow));
  const devReq = a.wire[reqAt('codex')].m.id;
  const archReq = a.wire[reqAt('codex-reply')].m.id;
  const respAt = (id) => at((w) => w.dir === '<-' && w.m.id === id && 'result' in w.m);
  check(Math.max(reqAt('codex'), reqAt('codex-reply')) < Math.min(respAt(devReq), respAt(archReq)),
    'the two calls were not in flight together');
  check(respAt(devReq) < respAt(archReq), 'dev-1 answered only after the slow turn of arch ended');
});

await step('atm_send arch → dev-1: inbox file in ATM format, delivered to idle dev-1 as a turn', async () => {
  const text = `please review the auth module ${nonce}`;
  const r = sc(await call(a, 'atm_send', { agent_id: arch.agent_id, to: 'dev-1', message: text }), 'atm_send');
  equal(r.from, 'arch', 'sender');
  equal(r.to, 'dev-1', 'recipient');
  check(typeof r.message_id === 'string' && r.message_id !== '', () => `no message_id: ${JSON.stringify(r)}`);
  const inbox = JSON.parse(readFileSync(inboxPath('dev-1'), 'utf8'));
  check(Array.isArray(inbox), 'the inbox is not a JSON array');
  const m = inbox.find((x) => x.message_id === r.message_id);
  check(m, () => `message ${r.message_id} not in the inbox: ${JSON.stringify(inbox)}`);
  equal(m.from, 'arch', 'inbox from');
  equal(m.text, text, 'inbox text');
  equal(typeof m.read, 'boolean', 'inbox read type');
  check(typeof m.timestamp === 'string' && !Number.isNaN(Date.parse(m.timestamp)), () => `bad timestamp ${m.timestamp}`);
  check(Math.abs(Date.now() - Date.parse(m.timestamp)) < 5 * 60 * 1000, () => `timestamp ${m.timestamp} is not now`);
  // dev-1 is idle: the mail becomes a turn at once.
  const envelope = [`<team-mail count="1" team="${cfg.team}">`, `<message from="arch" team="${cfg.team}"`, `id="${r.message_id}"`, text];
  const reqs = await waitFor('the model to get the mail as a <team-mail> turn',
    () => { const q = requestsWith(cfg.modelLog, ...envelope); return q.length ? q : null; }, 30000, 100);
  check(reqs.length === 1, `the mail was delivered ${reqs.length} times`);
  // On dev-1's thread: its history has dev-1's first prompt, not arch's.
  check(requestsWith(cfg.modelLog, ...envelope, `start dev-1 ${nonce}`).length === 1
    && requestsWith(cfg.modelLog, ...envelope, `hello from the node client ${nonce}`).length === 0,
  'the mail turn did not run on the thread of dev-1');
  // Delivered mail is marked read in the file.
  await waitFor('the delivered message to be marked read', () => {
    const now = JSON.parse(readFileSync(inboxPath('dev-1'), 'utf8')).find((x) => x.message_id === r.message_id);
    return now && now.read === true;
  }, 15000, 200);
  // The auto-mail turn ends and dev-1 is idle again.
  await waitFor('dev-1 idle after its mail turn', async () => {
    const st = sc(await call(a, 'agent_status', { agent_id: dev.agent_id }), 'agent_status dev-1');
    return st.status === 'idle' && st.mail && st.mail.delivered >= 1 ? st : null;
  }, 30000, 250);
});

await step('exec approval accepted by the client', async () => {
  const before = a.elicitations.length;
  const r = await call(a, 'codex-reply', { agent_id: arch.agent_id, prompt: 'RUN_SHELL ESCALATE CMD=echo accepted-cmd' });
  const got = a.elicitations.slice(before);
  equal(got.length, 1, 'elicitations for the accepted command');
  equal(got[0].agent_id, arch.agent_id, 'elicitation agent_id');
  equal(got[0].identity, 'arch', 'elicitation identity');
  check(String(got[0].command).includes('echo accepted-cmd'), () => `elicitation command: ${got[0].command}`);
  check(got[0].message.includes('echo accepted-cmd'), () => `elicitation message: ${got[0].message}`);
  check(got[0].requestedSchema && got[0].requestedSchema.type === 'object', 'elicitation without a requestedSchema');
  const out = sc(r, 'codex-reply').content;
  check(/tool output was:[\s\S]*accepted-cmd/.test(out), () => `the accepted command did not run: ${out}`);
});

await step('exec approval declined by the client', async () => {
  const before = a.elicitations.length;
  const r = await call(a, 'codex-reply', { agent_id: arch.agent_id, prompt: 'RUN_SHELL ESCALATE CMD=echo declined-cmd' });
  const got = a.elicitations.slice(before);
  equal(got.length, 1, 'elicitations for the declined command');
  check(String(got[0].command).includes('echo declined-cmd'), () => `elicitation command: ${got[0].command}`);
  const out = sc(r, 'codex-reply').content;
  log(`declined: ${out}`);
  if (cfg.backend === 'app-server') {
    // The app-server's decline carries no reason (Codex tells the model
    // "rejected by user"), so the proxy steers the turn with it: the model
    // reads both, and answers the note.
    check(out.includes('was denied: the e2e client says no'), () => `the model did not answer the denial note: ${out}`);
    check(requestsWith(cfg.modelLog, 'rejected by user', 'was denied: the e2e client says no').length > 0,
      'no model request has both the tool output and the denial note');
    return;
  }
  check(out.startsWith('MOCK_DONE: tool output was:'), () => `the model got no tool output: ${out}`);
  const toolOut = out.slice('MOCK_DONE: tool output was:'.length);
  check(!toolOut.includes('declined-cmd'), () => `the declined command ran: ${out}`);
  check(/reject|denied|declin/i.test(toolOut), () => `the tool output does not show the rejection: ${out}`);
});

await step('agent_sessions', async () => {
  const r = sc(await call(a, 'agent_sessions', {}), 'agent_sessions');
  check(Array.isArray(r.sessions), 'no sessions array');
  const byId = new Map(r.sessions.map((x) => [x.agent_id, x]));
  for (const [who, want] of [['arch', arch], ['dev-1', dev]]) {
    const x = byId.get(want.agent_id);
    check(x, () => `${who} (${want.agent_id}) not listed: ${JSON.stringify(r.sessions)}`);
    equal(x.identity, who, `${who} identity`);
    equal(x.backend_id, want.threadId, `${who} backend_id (the Codex thread)`);
    equal(x.team, cfg.team, `${who} team`);
    check(['idle', 'active'].includes(x.status), () => `${who} status ${x.status}`);
  }
});

await step('agent_status', async () => {
  const all = sc(await call(a, 'agent_status', {}), 'agent_status');
  equal(all.active_sessions, 2, 'active_sessions');
  equal(all.elicitation, true, 'elicitation capability seen by the proxy');
  equal(all.identities?.arch, arch.agent_id, 'identities.arch');
  equal(all.identities?.['dev-1'], dev.agent_id, 'identities.dev-1');
  check(all.child && all.child.alive === true, () => `codex child not alive: ${JSON.stringify(all.child)}`);
  equal(all.child.backend, cfg.backend, 'child backend');
  const one = sc(await call(a, 'agent_status', { agent_id: arch.agent_id }), 'agent_status arch');
  equal(one.agent_id, arch.agent_id, 'agent_status agent_id');
  equal(one.identity, 'arch', 'agent_status identity');
  equal(one.status, 'idle', 'agent_status status');
});

await step('agent_close dev-1', async () => {
  const r = sc(await call(a, 'agent_close', { agent_id: dev.agent_id }), 'agent_close');
  equal(r.agent_id, dev.agent_id, 'closed agent_id');
  equal(r.identity, 'dev-1', 'closed identity');
  equal(r.status, 'closed', 'closed status');
  equal(r.already_closed, false, 'already_closed');
  if (r.summary_saved) check(existsSync(summaryPath('dev-1', dev.threadId)), 'summary_saved but no summary.md for dev-1');
  const st = sc(await call(a, 'agent_status', {}), 'agent_status');
  equal(st.active_sessions, 1, 'active_sessions after close');
  check(!(st.identities && st.identities['dev-1']), 'dev-1 still held after close');
});

await step('progress: some for every turn, none after a response', async () => {
  checkProgress(a);
  const other = a.errors.filter((e) => !e.includes('unknown token'));
  check(other.length === 0, () => `client errors: ${other.join(' | ')}`);
});

await step('close the client (stdin EOF) → summaries written', async () => {
  await closeClient(a);
  check(existsSync(summaryPath('arch', arch.threadId)), `no summary at ${summaryPath('arch', arch.threadId)}`);
  // The summary is the model's answer to the proxy's summary prompt.
  check(requestsWith(cfg.modelLog, 'Session ending. Write a concise summary').length > 0,
    'the model was never asked for a summary');
  const text = readFileSync(summaryPath('arch', arch.threadId), 'utf8');
  check(text.includes('MOCK_REPLY') && text.includes('Session ending'), () => `the summary of arch is not the model's answer: ${text.slice(0, 300)}`);
});

let b;
await step('a new client and process: serve --resume=<agent_id>', async () => {
  b = await connect('resumed', [`--resume=${arch.agent_id}`]);
  const st = sc(await call(b, 'agent_status', {}), 'agent_status');
  equal(st.identities?.arch, arch.agent_id, 'resumed identities.arch');
});

await step('codex-reply on the resumed agent_id carries the previous session', async () => {
  const prompt = `where were we ${nonce}`;
  const r = sc(await call(b, 'codex-reply', { agent_id: arch.agent_id, prompt }), 'codex-reply resumed');
  equal(r.agent_id, arch.agent_id, 'agent_id');
  equal(r.identity, 'arch', 'identity');
  check(r.content.startsWith('MOCK_REPLY: '), () => `reply: ${r.content}`);
  equal(r.thread?.resumed, true, 'thread.resumed');
  if (cfg.backend === 'app-server') {
    // The thread itself continues: the model has its earlier turns.
    equal(r.thread?.continued, true, 'thread.continued');
    equal(r.threadId, arch.threadId, 'the same thread');
    const reqs = requestsWith(cfg.modelLog, `hello from the node client ${nonce}`, prompt);
    check(reqs.length > 0, 'no model request has both the first turn and the new prompt in its input');
  } else {
    // mcp-server cannot continue it: a new thread, told the summary.
    equal(r.thread?.continued, false, 'thread.continued');
    equal(r.thread?.given, 'its saved summary', 'thread.given');
    const reqs = requestsWith(cfg.modelLog, '[Previous session — ', prompt);
    check(reqs.length > 0, 'no model request has both "[Previous session — " and the new prompt in its input');
  }
  checkProgress(b);
});

await step('close the resumed client', async () => {
  await closeClient(b);
});

await sleep(0);
log('PASS client.mjs');
process.exit(0);
