// atm-agent-mcp view: the team's agents, live. Plain DOM, no build step.
// Every change arrives as a server-sent event; rows are updated in place,
// once per animation frame, so the page stays quick with many agents.
"use strict";
(function () {
  const body = document.body;
  const token = body.dataset.token;
  const pageToken = body.dataset.page;
  const q = (id) => document.getElementById(id);

  const agents = new Map(); // serve/agent_id → agent
  const serves = new Map(); // instance → serve
  let mail = [];
  let totals = {}; // what the registries add to the agents: closed sessions no feed shows, the team's budget
  const diffs = new Map(); // agent → {key, text} of its change as last fetched
  const dirty = new Set();
  let dirtyAll = true;
  let dirtyMail = true;
  let dirtyTimeline = true;
  const spanKeys = new Map(); // agent → its spans as last drawn
  let scheduled = false;
  const answering = new Set(); // approvals answered from this page
  const answerErrors = new Map(); // approval → why its answer was refused

  const STATE_TEXT = {
    working: "working", waiting_approval: "waiting for approval", waiting_mail: "waiting for mail",
    idle: "idle", failed: "failed", closed: "closed", gone: "gone (serve exited)",
  };
  const keyOf = (a) => a.serve + "/" + a.agent_id;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k.startsWith("data-")) e.setAttribute(k, v);
        else e[k] = v;
      }
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }

  function since(t) {
    if (!t) return "";
    const ms = Date.now() - new Date(t).getTime();
    if (!(ms >= 0)) return "0s";
    const s = Math.floor(ms / 1000);
    if (s < 60) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m" + String(s % 60).padStart(2, "0") + "s";
    const h = Math.floor(m / 60);
    return h + "h" + String(m % 60).padStart(2, "0") + "m";
  }
  function clock(t) {
    const d = new Date(t);
    return isNaN(d) ? "" : d.toLocaleTimeString([], { hour12: false });
  }
  function tokens(u) {
    if (!u) return "–";
    const n = u.total_tokens || 0;
    return n >= 1e6 ? (n / 1e6).toFixed(2) + "M" : n >= 1e4 ? (n / 1e3).toFixed(1) + "k" : String(n);
  }
  function tokensTitle(u) {
    if (!u) return "the agent reported no tokens";
    return `input ${u.input_tokens} (cached ${u.cached_input_tokens}), output ${u.output_tokens}, total ${u.total_tokens}` +
      (u.context_window ? `; context ${u.context_tokens} of ${u.context_window}` : "");
  }
  function cost(u) {
    if (!u || !u.cost) return "–";
    const c = u.cost;
    return c.currency === "USD" ? "$" + c.amount.toFixed(4) : c.amount.toFixed(4) + " " + c.currency;
  }
  function budget(b) {
    if (!b) return "–";
    return b.percent + " %" + (b.exceeded ? " used up" : "");
  }
  function budgetTitle(b) {
    if (!b) return "no token budget";
    return `${b.used_tokens} of ${b.budget_tokens} tokens${b.raised ? " (raised)" : ""}` +
      (b.exceeded ? ": no new turn starts until it is raised" : "");
  }
  function branchOf(a) { return (a.worktree && a.worktree.branch) || a.branch || ""; }
  function changes(a) {
    const w = a.worktree;
    if (!w) return "";
    if (w.stat) return `${w.stat.files} file${w.stat.files === 1 ? "" : "s"} +${w.stat.added} −${w.stat.removed}`;
    if (w.released === "removed") return "no change (removed)";
    return w.stat_text || "";
  }
  function doing(a) {
    if (a.state === "waiting_approval" && a.approvals && a.approvals.length) return "asks: " + a.approvals[0].question;
    if (a.item) return (a.item.type === "thinking" ? "" : a.item.type.replace("_", " ") + ": ") + a.item.summary;
    if (a.state === "failed" && a.last) return a.last.error || a.last.text || "";
    if (a.problem) return a.problem;
    return "";
  }
  function forWhat(a) {
    if (a.item && (a.state === "working")) return a.item.since;
    return a.state_since;
  }

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(render);
  }

  // ---- rendering ----
  function render() {
    scheduled = false;
    const list = [...agents.values()].sort((x, y) => x.identity.localeCompare(y.identity) || x.serve.localeCompare(y.serve));
    if (/^#agent\//.test(location.hash)) {
      // Only the agent's page shows: the team's parts are drawn again, whole,
      // on the way back (hashchange).
      renderSummary(list);
      renderServes();
      renderAgentPage();
      dirty.clear();
      return;
    }
    const rows = q("agent-rows");
    if (dirtyAll) {
      rows.textContent = "";
      for (const a of list) rows.append(...agentRows(a));
    } else {
      for (const k of dirty) {
        const a = agents.get(k);
        for (const old of rows.querySelectorAll(`tr[data-owner="${CSS.escape(k)}"]`)) old.remove();
        const fresh = agentRows(a);
        // keep the order: before the first row of a later agent
        const i = list.findIndex((x) => keyOf(x) === k);
        let next = null;
        for (let j = i + 1; j < list.length && !next; j++) next = rows.querySelector(`tr[data-owner="${CSS.escape(keyOf(list[j]))}"]`);
        for (const r of fresh) rows.insertBefore(r, next);
      }
    }
    q("no-agents").hidden = agents.size > 0;
    if (dirtyAll || dirty.size > 0) {
      renderSummary(list);
      renderApprovals(list);
    }
    if (dirtyTimeline) renderTimeline(list);
    if (dirtyMail) renderMail();
    renderServes();
    renderAgentPage();
    dirty.clear();
    dirtyAll = false;
    dirtyMail = false;
    dirtyTimeline = false;
  }

  function agentRows(a) {
    const k = keyOf(a);
    const approvals = (a.approvals || []).length;
    const dir = ((a.worktree && a.worktree.path) || a.cwd || "").split("/").filter(Boolean).pop() || a.cwd || "";
    const branch = branchOf(a);
    const where = el("td", { class: "where", title: (a.worktree && a.worktree.path) || a.cwd || "" },
      el("span", { class: "dir", text: dir }),
      branch ? el("span", { class: "branch", text: "  ⎇ " + branch }) : null,
      a.worktree ? el("span", { class: "changes", text: changes(a) }) : null);
    const tr = el("tr", { "data-owner": k, "data-key": k, "data-identity": a.identity, "data-state": a.state, class: a.state },
      el("td", null, el("a", { href: "#agent/" + encodeURIComponent(a.serve) + "/" + encodeURIComponent(a.agent_id), text: a.identity }),
        approvals ? el("span", { class: "badge", title: "pending approvals", text: String(approvals) }) : null),
      el("td", { text: a.kind + (a.model ? " · " + a.model : "") }),
      el("td", null, el("span", { class: "state " + a.state, text: STATE_TEXT[a.state] || a.state })),
      el("td", { class: "doing", text: doing(a), title: doing(a) }),
      el("td", { class: "for", "data-since": forWhat(a) || "", text: a.state === "closed" || a.state === "gone" ? "" : since(forWhat(a)) }),
      el("td", { class: "num", text: String(a.turns) }),
      el("td", { class: "num tokens", text: tokens(a.usage), title: tokensTitle(a.usage) }),
      el("td", { class: "num cost", text: cost(a.usage) }),
      el("td", { class: "num budget" + (a.budget && a.budget.exceeded ? " over" : ""), text: budget(a.budget), title: budgetTitle(a.budget) }),
      el("td", { class: "num mail", text: String(a.unread_mail || 0), title: "unread mail" }),
      where,
      el("td", { class: "serve", text: a.serve }));
    const out = [tr];
    for (const s of a.sub_agents || []) {
      out.push(el("tr", { class: "sub", "data-owner": k },
        el("td", { text: "└ " + s.thread_id.slice(0, 13) }), el("td", { text: "sub-agent" }),
        el("td", { text: s.status }), el("td", { class: "doing", text: s.message || "" }),
        el("td"), el("td"), el("td"), el("td"), el("td"), el("td"), el("td"), el("td")));
    }
    return out;
  }

  function renderSummary(list) {
    const counts = {};
    for (const a of list) counts[a.state] = (counts[a.state] || 0) + 1;
    const order = ["waiting_approval", "working", "waiting_mail", "idle", "failed", "closed", "gone"];
    const parts = order.filter((s) => counts[s]).map((s) => counts[s] + " " + STATE_TEXT[s]);
    let total = 0;
    const costs = {};
    for (const u of list.map((a) => a.usage).concat([totals.recorded])) {
      if (!u) continue;
      total += u.total_tokens || 0;
      if (u.cost) costs[u.cost.currency] = (costs[u.cost.currency] || 0) + u.cost.amount;
    }
    const spent = [total ? tokens({ total_tokens: total }) + " tokens" : ""]
      .concat(Object.entries(costs).map(([c, v]) => cost({ cost: { amount: v, currency: c } }))).filter(Boolean);
    if (totals.budget_tokens) {
      const pct = Math.floor((total * 100) / totals.budget_tokens);
      spent.push(`budget ${pct} % of ${totals.budget_tokens}` + (total >= totals.budget_tokens ? " (used up)" : ""));
    }
    q("spent").title = totals.recorded_sessions ? `with ${totals.recorded_sessions} closed session(s) no serve shows now` : "";
    q("summary").textContent = list.length ? `${list.length} agent${list.length === 1 ? "" : "s"}: ${parts.join(", ")}` : "no agents";
    q("spent").textContent = spent.length ? "team: " + spent.join(" · ") : "";
  }

  function approvalItem(a, p) {
    const key = a.serve + "/" + a.agent_id + "/" + p.id;
    const err = el("span", { class: "answer-error", text: answerErrors.get(key) || "" });
    const approve = el("button", { class: "approve", text: "Approve", type: "button" });
    const deny = el("button", { class: "deny", text: "Deny", type: "button" });
    const li = el("li", { class: "approval", "data-approval-id": p.id, "data-identity": a.identity },
      el("span", { class: "q" }, el("span", { class: "who", text: a.identity + " " }), p.question,
        el("span", { class: "time", text: " (" + since(p.since) + ")" })),
      approve, deny, err);
    const send = async (decision) => {
      approve.disabled = deny.disabled = true;
      answering.add(key);
      try {
        const r = await fetch("/api/answer?token=" + encodeURIComponent(token), {
          method: "POST", headers: { "Content-Type": "application/json", "X-Page-Token": pageToken },
          body: JSON.stringify({ serve: a.serve, agent_id: a.agent_id, approval_id: p.id, decision }),
        });
        const res = await r.json().catch(() => ({ error: r.statusText }));
        if (!r.ok) {
          err.textContent = res.error || r.statusText;
          answerErrors.set(key, err.textContent);
        } else li.dataset.answered = decision;
      } catch (e) {
        err.textContent = String(e);
        answerErrors.set(key, err.textContent);
      }
    };
    approve.addEventListener("click", () => send("approve"));
    deny.addEventListener("click", () => send("deny"));
    if (answering.has(key)) approve.disabled = deny.disabled = true;
    return li;
  }

  function renderApprovals(list) {
    const ul = q("approvals");
    ul.textContent = "";
    let n = 0;
    for (const a of list) {
      for (const p of a.approvals || []) {
        ul.append(approvalItem(a, p));
        n++;
      }
    }
    q("needs").hidden = n === 0;
  }

  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    return e;
  }
  function renderTimeline(list) {
    const box = q("timeline");
    const withSpans = list.filter((a) => (a.spans || []).length);
    box.textContent = "";
    if (!withSpans.length) {
      box.append(el("p", { class: "muted", text: "No turn yet." }));
      return;
    }
    const now = Date.now();
    let from = now;
    for (const a of withSpans) from = Math.min(from, new Date(a.spans[0].start).getTime());
    from = Math.max(Math.min(from, now - 20e3), now - 30 * 60e3); // 20 s to 30 min
    const W = 1000, label = 140, lane = 22, H = withSpans.length * lane + 20;
    const x = (t) => label + ((t - from) / (now - from)) * (W - label - 10);
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "each agent's turns over time" });
    withSpans.forEach((a, i) => {
      const y = i * lane;
      s.append(svg("rect", { class: "lane", x: label, y: y + 3, width: W - label - 10, height: lane - 6 }));
      s.append(svg("text", { x: 0, y: y + lane - 7, text: a.identity }));
      for (const sp of a.spans) {
        const st = new Date(sp.start).getTime();
        const en = sp.end && !sp.end.startsWith("0001") ? new Date(sp.end).getTime() : now;
        const open = !sp.end || sp.end.startsWith("0001");
        if (en < from) continue;
        const cls = open ? (a.state === "waiting_approval" ? "approval" : "running") : sp.status || "";
        const r = svg("rect", { class: "span " + cls, x: x(Math.max(st, from)), y: y + 5, width: Math.max(3, x(en) - x(Math.max(st, from))), height: lane - 10 });
        r.append(svg("title", { text: `${a.identity}: ${clock(sp.start)} – ${open ? "now" : clock(sp.end)} ${sp.status || ""}` }));
        s.append(r);
      }
    });
    s.append(svg("text", { x: label, y: H - 4, text: clock(from) }));
    s.append(svg("text", { x: W - 60, y: H - 4, text: "now" }));
    box.append(s);
  }

  function mailItem(m) {
    return el("li", { "data-from": m.from, "data-to": m.to },
      el("span", { class: "time", text: clock(m.at) }),
      el("span", { class: "route", text: `${m.from} → ${m.to}` }),
      m.summary || m.text.slice(0, 200));
  }
  function renderMail() {
    const ol = q("mail");
    ol.textContent = "";
    const recent = mail.slice(-200).reverse();
    for (const m of recent) ol.append(mailItem(m));
    q("no-mail").hidden = mail.length > 0;
  }

  function renderServes() {
    const parts = [...serves.values()].map((s) => `${s.instance} (pid ${s.pid}) ${s.live ? "live" : "exited"}`);
    q("serves").textContent = parts.length ? "serves: " + parts.join(" · ") : "no serve of this team is running";
  }

  // ---- the agent page (#agent/<serve>/<agent_id>) ----
  function renderAgentPage() {
    const m = location.hash.match(/^#agent\/([^/]+)\/(.+)$/);
    q("main").hidden = !!m;
    q("agent-page").hidden = !m;
    if (!m) return;
    const a = agents.get(decodeURIComponent(m[1]) + "/" + decodeURIComponent(m[2]));
    if (!a) {
      q("ap-title").textContent = "no such agent";
      return;
    }
    q("ap-title").textContent = `${a.identity} · ${STATE_TEXT[a.state] || a.state}`;
    const facts = q("ap-facts");
    facts.textContent = "";
    const fact = (k, v) => v && facts.append(el("dt", { text: k }), el("dd", { text: v }));
    fact("agent_id", a.agent_id);
    fact("kind", a.kind);
    fact("model", a.model);
    fact("doing now", doing(a));
    fact("turns", String(a.turns));
    fact("tokens", tokensTitle(a.usage));
    fact("cost", a.usage && a.usage.cost ? cost(a.usage) : "");
    fact("budget", a.budget ? budgetTitle(a.budget) : "");
    fact("unread mail", String(a.unread_mail || 0));
    fact("cwd", a.cwd);
    if (a.worktree) {
      fact("worktree", a.worktree.path);
      fact("base", (a.worktree.base || "").slice(0, 12));
    }
    fact("branch", branchOf(a));
    fact("changes", changes(a));
    fact("serve", a.serve);
    const ap = q("ap-approvals");
    ap.textContent = "";
    for (const p of a.approvals || []) ap.append(approvalItem(a, p));
    if (!(a.approvals || []).length) ap.append(el("li", { class: "muted", text: "nothing" }));
    const ev = q("ap-events");
    ev.textContent = "";
    for (const e of (a.events || []).filter((e) => e.summary).reverse()) {
      ev.append(el("li", null, el("span", { class: "time", text: clock(e.time) }), e.type + (e.summary ? ": " + e.summary : "")));
    }
    const ms = q("ap-messages");
    ms.textContent = "";
    for (const t of (a.messages || []).slice().reverse()) ms.append(el("li", { text: t }));
    q("ap-last").textContent = a.last ? `${a.last.status} at ${clock(a.last.at)}\n\n${a.last.error || a.last.text || ""}` : "no turn has ended yet";
    const am = q("ap-mail");
    am.textContent = "";
    for (const x of mail.filter((x) => x.from === a.identity || x.to === a.identity).slice(-50).reverse()) am.append(mailItem(x));
    renderDiff(a);
  }

  // An isolated agent's change, fetched from the serve that runs it when
  // its page opens and again when its turns or its stat change.
  function renderDiff(a) {
    const box = q("ap-diff-box");
    box.hidden = !a.worktree;
    if (!a.worktree) return;
    q("ap-diff-stat").textContent = changes(a);
    const k = keyOf(a);
    const want = a.turns + "/" + JSON.stringify(a.worktree.stat || null) + "/" + a.state;
    const have = diffs.get(k);
    if (have && have.key === want) {
      drawDiff(have.text, have.more);
      return;
    }
    diffs.set(k, { key: want, text: have ? have.text : "reading the change…", more: false });
    drawDiff(diffs.get(k).text, false);
    const url = "/api/diff?token=" + encodeURIComponent(token) + "&serve=" + encodeURIComponent(a.serve) + "&agent_id=" + encodeURIComponent(a.agent_id);
    fetch(url).then((r) => r.json()).then((res) => {
      const text = res.ok ? (res.patch || "no change against its base") : "cannot read the change: " + res.error;
      diffs.set(k, { key: want, text, more: !!res.more });
      schedule();
    }).catch((e) => { diffs.set(k, { key: want, text: String(e), more: false }); schedule(); });
  }
  function drawDiff(text, more) {
    const pre = q("ap-diff");
    if (pre.dataset.text === text) return;
    pre.dataset.text = text;
    pre.textContent = "";
    for (const line of text.split("\n")) {
      const cls = /^\+(?!\+\+)/.test(line) ? "add" : /^-(?!--)/.test(line) ? "del" : /^@@/.test(line) ? "hunk" : null;
      pre.append(cls ? el("span", { class: cls, text: line }) : line + "\n");
    }
    if (more) pre.append(el("span", { class: "muted", text: "… (cut: the change is longer)" }));
  }
  window.addEventListener("hashchange", () => { dirtyAll = dirtyTimeline = dirtyMail = true; schedule(); });
  q("back").addEventListener("click", (e) => { e.preventDefault(); location.hash = ""; });

  // the "for" column ticks, and the timeline moves on
  setInterval(() => {
    dirtyTimeline = true;
    schedule();
    for (const td of document.querySelectorAll("td.for[data-since]")) {
      if (td.dataset.since && td.textContent !== "") td.textContent = since(td.dataset.since);
    }
  }, 1000);

  // ---- the stream ----
  function connect() {
    const es = new EventSource("/events?token=" + encodeURIComponent(token));
    es.addEventListener("snapshot", (e) => {
      const s = JSON.parse(e.data);
      agents.clear();
      for (const a of s.agents) agents.set(keyOf(a), a);
      serves.clear();
      for (const v of s.serves) serves.set(v.instance, v);
      mail = s.mail || [];
      totals = s.totals || {};
      q("conn").textContent = "";
      dirtyAll = dirtyMail = dirtyTimeline = true;
      schedule();
    });
    es.addEventListener("agent", (e) => {
      const a = JSON.parse(e.data).agent;
      const k = keyOf(a);
      if (!agents.has(k)) dirtyAll = true;
      agents.set(k, a);
      const sk = JSON.stringify(a.spans || []) + a.state;
      if (spanKeys.get(k) !== sk) {
        spanKeys.set(k, sk);
        dirtyTimeline = true;
      }
      dirty.add(k);
      schedule();
    });
    es.addEventListener("mail", (e) => {
      mail.push(JSON.parse(e.data).mail);
      if (mail.length > 2000) mail = mail.slice(-1000);
      dirtyMail = true;
      schedule();
    });
    es.addEventListener("totals", (e) => {
      totals = JSON.parse(e.data).totals || {};
      dirtyAll = true;
      schedule();
    });
    es.addEventListener("serve", (e) => {
      const s = JSON.parse(e.data).serve;
      serves.set(s.instance, s);
      schedule();
    });
    es.onerror = () => { q("conn").textContent = "reconnecting to atm-agent-mcp view…"; };
  }
  connect();
})();
