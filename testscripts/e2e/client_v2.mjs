// client_v2.mjs: the official TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0) drives `atm-agent-mcp serve`, which
// drives the real Codex CLI against the loopback model, in each of its
// version-negotiation modes: 'legacy' (initialize, 2025-11-25; approvals
// are elicitation/create requests), 'auto' (probes server/discover, then
// speaks 2026-07-28) and pinned to 2026-07-28 (no probe). In the modern
// era approvals come back as input_required results, which the SDK fulfils
// through the same elicitation handler and retries. Every step is
// asserted.
//
// Run by testscripts/node_e2e_test.go (TestNodeClient) with the same
// environment as client.mjs (see lib.mjs config()).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { check, config, equal, log, step, textOf, watchdog, whenFailing } from './lib.mjs';

const cfg = config();
watchdog(cfg.timeoutMs);
const CALL_TIMEOUT = 30000;

/** connect starts serve and connects the v2 client in one negotiation mode. */
async function connect(name, versionNegotiation) {
  const s = { name, elicitations: [], errors: [] };
  const args = ['serve', '--team', cfg.team, '--identity', `proxy-${name}`, '--codex-bin', cfg.codexBin,
    '--backend', cfg.backend, '--approval-policy', 'on-request', '--log-level', 'debug',
    '--log-file', join(cfg.logDir, `proxy-v2-${name}.log`)];
  const transport = new StdioClientTransport({ command: cfg.bin, args, cwd: cfg.work, env: { ...process.env }, stderr: 'pipe' });
  const opts = { capabilities: { elicitation: { form: {} } } };
  if (versionNegotiation) opts.versionNegotiation = versionNegotiation;
  const client = new Client({ name: `atm-e2e-v2-${name}`, version: '2.4.0' }, opts);
  client.onerror = (e) => s.errors.push(String(e && e.message ? e.message : e));
  client.setRequestHandler('elicitation/create', async (req) => {
    const p = req.params;
    s.elicitations.push(p);
    log(`${name}: elicitation: ${p.message}`);
    if (String(p.message).includes('accepted-v2')) return { action: 'accept', content: {} };
    return { action: 'cancel' };
  });
  whenFailing(() => {
    if (s.errors.length) process.stdout.write(`${name} client errors: ${s.errors.join(' | ')}\n`);
  });
  await client.connect(transport, { timeout: 30000 });
  s.client = client;
  return s;
}

async function call(s, name, args) {
  const r = await s.client.callTool({ name, arguments: args }, { timeout: CALL_TIMEOUT });
  check(!r.isError, () => `${s.name}: ${name} returned an error: ${textOf(r)}`);
  check(r.structuredContent, () => `${s.name}: ${name} has no structuredContent`);
  return r;
}

function inbox(identity) {
  return JSON.parse(readFileSync(join(cfg.atmHome, '.claude', 'teams', cfg.team, 'inboxes', `${identity}.json`), 'utf8'));
}

log(`backend ${cfg.backend}, codex ${cfg.codexBin}`);
for (const [mode, negotiation, want] of [
  ['legacy', undefined, '2025-11-25'],
  ['auto', { mode: 'auto' }, '2026-07-28'],
  ['pinned', { mode: { pin: '2026-07-28' } }, '2026-07-28'],
]) {
  let s;
  let agent;
  await step(`${mode}: connect`, async () => {
    s = await connect(mode, negotiation);
    equal(s.client.getNegotiatedProtocolVersion(), want, `${mode}: negotiated protocol version`);
    equal(s.client.getServerVersion()?.name, 'atm-agent-mcp', `${mode}: server name`);
  });
  await step(`${mode}: tools/list`, async () => {
    const { tools } = await s.client.listTools();
    equal(tools.length, 19, `${mode}: number of tools`);
  });
  await step(`${mode}: codex as an identity`, async () => {
    const r = await call(s, 'codex', { prompt: `hello from v2 ${mode}`, identity: `v2-${mode}`, cwd: cfg.work });
    agent = r.structuredContent;
    equal(agent.status, 'completed', `${mode}: codex status`);
    check(String(agent.content).startsWith('MOCK_REPLY: '), () => `${mode}: not the model's reply: ${agent.content}`);
  });
  await step(`${mode}: an approval accepted`, async () => {
    const before = s.elicitations.length;
    const r = await call(s, 'codex-reply', { agent_id: agent.agent_id, prompt: 'RUN_SHELL ESCALATE CMD=echo accepted-v2' });
    equal(s.elicitations.length - before, 1, `${mode}: elicitations for the accepted command`);
    const out = r.structuredContent.content;
    check(out.includes('accepted-v2'), () => `${mode}: the accepted command did not run: ${out}`);
  });
  await step(`${mode}: an approval cancelled, as headless clients answer: denied, the turn finishes`, async () => {
    const before = s.elicitations.length;
    const r = await call(s, 'codex-reply', { agent_id: agent.agent_id, prompt: 'RUN_SHELL ESCALATE CMD=echo cancelled-v2' });
    equal(s.elicitations.length - before, 1, `${mode}: elicitations for the cancelled command`);
    equal(r.structuredContent.status, 'completed', `${mode}: status after a cancel`);
    const out = r.structuredContent.content;
    if (cfg.backend === 'app-server') {
      // The app-server's decline has no reason: the turn was steered with
      // it, and the model answers that note (nobody was asked).
      check(out.includes('was denied: the approval request was dismissed without an answer: the MCP client cancelled it'),
        () => `${mode}: the agent was not told who denied it: ${out}`);
      return;
    }
    const toolOut = out.slice('MOCK_DONE: tool output was:'.length);
    check(out.startsWith('MOCK_DONE: tool output was:') && !toolOut.includes('cancelled-v2\n'), () => `${mode}: the cancelled command ran: ${out}`);
    check(/dismissed without an answer: the MCP client cancelled it/.test(toolOut), () => `${mode}: the agent was not told who denied it: ${out}`);
  });
  await step(`${mode}: atm_send as the agent`, async () => {
    await call(s, 'atm_send', { identity: `v2-${mode}`, to: 'qa', message: `v2 ${mode} says hi` });
    check(inbox('qa').some((m) => m.from === `v2-${mode}` && m.text === `v2 ${mode} says hi`), `${mode}: the message is not in qa's inbox`);
  });
  await step(`${mode}: a background turn and agent_wait`, async () => {
    const r = await call(s, 'codex-reply', { agent_id: agent.agent_id, prompt: 'in the background', background: true });
    equal(r.structuredContent.status, 'busy', `${mode}: background status`);
    const w = await call(s, 'agent_wait', { agent_id: agent.agent_id, timeout_secs: 30 });
    equal(w.structuredContent.done, true, `${mode}: agent_wait done`);
  });
  await step(`${mode}: close`, async () => {
    await s.client.close();
    const other = s.errors.filter((e) => !e.includes('Connection closed'));
    check(other.length === 0, () => `${mode}: client errors: ${other.join(' | ')}`);
  });
}
log('PASS client_v2.mjs');
