"use strict";
// Every piece of run data is written with textContent or as an attribute value; none is parsed as HTML.
(function () {
  const data = JSON.parse(document.getElementById("run-data").textContent);
  const pool = data.pool;
  const resolved = new Map();
  const REF = "\u0000";
  const frames = data.frames;
  const steps = new Map(data.steps.map((s) => [s.index, s]));
  const toolRuns = new Map(data.steps.flatMap((s) => s.tool_runs.map((t) => [t.tool_call_id, t])));
  const byId = (id) => document.getElementById(id);
  let at = 0;
  let timer = null;
  let marked = [0, 0]; // the messages now marked new
  let listed = 0; // the messages now shown

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function number(n) {
    return Number(n).toLocaleString("en-US");
  }

  // Data kept with shared values: a string NUL + index is pool[index]; NUL NUL ... is the string less one NUL.
  // A pooled string is kept as it is, a pooled object in the same shared form.
  function expand(value) {
    if (typeof value === "string") {
      if (value.charCodeAt(0) !== 0) return value;
      return value.charCodeAt(1) === 0 ? value.slice(1) : resolve(Number(value.slice(REF.length)));
    }
    if (Array.isArray(value)) return value.map(expand);
    if (value !== null && typeof value === "object") {
      const out = {};
      for (const key of Object.keys(value)) {
        Object.defineProperty(out, key, { value: expand(value[key]), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    return value;
  }

  function resolve(index) {
    if (!resolved.has(index)) {
      const kept = pool[index];
      resolved.set(index, typeof kept === "string" ? kept : expand(kept));
    }
    return resolved.get(index);
  }

  function jsonText(value) {
    return typeof value === "string" ? value : JSON.stringify(value, null, 2);
  }

  // -- the header -------------------------------------------------------------------

  function header() {
    const run = data.run;
    byId("title").textContent = run.title || "run " + run.id;
    document.title = "Replay: " + (run.title || run.id);
    const who = run.provider + (run.model ? "/" + run.model : "");
    const stop = run.stop_reason ? "stopped: " + run.stop_reason : "not finished";
    byId("about").textContent =
      "Run " + run.id + " \u00b7 " + who + " \u00b7 " + data.steps.length + " of " + run.max_steps + " steps \u00b7 " + stop +
      " \u00b7 " + run.created_at + (run.parent ? " \u00b7 forked from run " + run.parent.run_id + " at step " + run.parent.step : "");
  }

  // -- messages ---------------------------------------------------------------------

  function messageItem(m, i) {
    const item = el("li", "message " + m.role + (m.is_error ? " error" : ""));
    item.dataset.index = String(i);
    const head = el("div", "head");
    head.append(el("span", "role", "#" + (i + 1) + " " + m.role));
    if (m.role === "tool") head.append(el("span", "note", " " + m.name + " \u00b7 " + m.id + (m.is_error ? " \u00b7 error" : "")));
    item.append(head);
    const run = m.role === "tool" ? toolRuns.get(m.id) : undefined;
    if (run && run.badge) item.append(el("div", "badge " + (run.source === "repeat" ? "repeat" : "decision"), run.badge));
    if (run && run.original_arguments !== null && run.original_arguments !== undefined) {
      item.append(el("div", "original", "The model asked " + run.original_arguments));
    }
    if (run && run.original_content !== null && run.original_content !== undefined) {
      const cut = run.original_content.length <= 200 ? run.original_content : run.original_content.slice(0, 199) + "\u2026";
      item.append(el("div", "original", "The person changed this result; the tool returned " + cut));
    }
    for (const text of m.reasoning || []) item.append(el("div", "reasoning", text));
    if (m.content !== null && m.content !== undefined && m.content !== "") item.append(el("div", "content", m.content));
    for (const call of m.calls || []) {
      const line = el("div", "call");
      line.append(el("span", "call-name", call.name), el("span", "arguments", "(" + call.arguments + ")"));
      line.append(el("span", "note", "  " + call.id));
      item.append(line);
    }
    item.hidden = true;
    return item;
  }

  data.messages = expand(data.messages);
  const messageItems = data.messages.map(messageItem);
  byId("messages").append(...messageItems);

  // -- tokens -----------------------------------------------------------------------

  const most = data.steps.reduce((m, s) => Math.max(m, s.sent), 1);
  const tokenRows = new Map();
  for (const s of data.steps) {
    const row = el("tr");
    row.dataset.step = String(s.index);
    const growth = s.growth === null ? "" : (s.growth >= 0 ? "+" : "") + number(s.growth);
    row.append(el("td", "step", s.index), el("td", "sent", number(s.sent)), el("td", "growth", growth));
    row.append(el("td", "received", number(s.received)));
    const bar = el("td");
    const meter = el("meter");
    meter.min = 0;
    meter.max = most;
    meter.value = s.sent;
    bar.append(meter);
    row.append(bar);
    row.hidden = true;
    tokenRows.set(s.index, row);
    byId("tokens").tBodies[0].append(row);
  }

  function stepTokens(s) {
    if (!s) return "No model call yet.";
    let text = "Step " + s.index + " sent " + number(s.sent) + " tokens";
    if (s.growth !== null) text += " (" + (s.growth >= 0 ? "+" : "") + number(s.growth) + " since step " + (s.index - 1) + ")";
    text += " and received " + number(s.received) + ".";
    if (s.cache_read || s.cache_write) text += " Cache: " + number(s.cache_read) + " read, " + number(s.cache_write) + " written.";
    if (s.estimated) text += " (estimated)";
    text += " Answered by " + s.model + ".";
    if (s.tools_withheld) text += " No tools: the loop guard asked for an answer.";
    if (s.policies) {
      const marks = Object.entries(s.policies.marks).map(([mark, n]) => n + " " + mark);
      text += " Context policies " + s.policies.names.join(", ") + ": " + (marks.length ? marks.join(", ") : "nothing changed");
      text += s.policies.summary ? ", a summary sent in their place." : ".";
    }
    return text;
  }

  // -- the wire view ----------------------------------------------------------------

  function side(label, headers, body) {
    const box = el("div", "side");
    box.append(el("h3", null, label));
    if (headers && Object.keys(headers).length) box.append(el("pre", "headers", jsonText(headers)));
    box.append(el("pre", "body", body === null || body === undefined ? "(none)" : jsonText(expand(body))));
    for (const pre of box.querySelectorAll("pre")) pre.tabIndex = 0; // a long body scrolls: the keyboard reaches it
    return box;
  }

  function exchange(title, wire) {
    const block = el("details");
    block.open = true;
    block.append(el("summary", null, title));
    block.append(el("p", "note", (wire.url || "(no URL: in-process)") + " \u00b7 " + (wire.status === null || wire.status === undefined ? "no HTTP status" : "HTTP " + wire.status)));
    const sides = el("div", "wire-sides");
    sides.append(side("Request", wire.request_headers, wire.request), side("Response", wire.response_headers, wire.response));
    block.append(sides);
    return block;
  }

  function wireView(s) {
    const box = byId("wire");
    box.replaceChildren();
    if (!s) {
      box.append(el("p", "note", "The wire view shows each step's exchange once the model has been called."));
      return;
    }
    box.append(el("p", "note", "Step " + s.index + " \u00b7 " + s.model + " \u00b7 " + number(s.latency_ms) + " ms \u00b7 finish: " + (s.finish_reason || "\u2014")));
    if (s.wire) box.append(exchange("Model call of step " + s.index, s.wire));
    else box.append(el("p", "note", "This provider recorded no wire exchange for this step."));
    for (const t of s.tool_runs) {
      const how = t.source === "ran" ? "" : " \u00b7 " + (t.badge || t.source);
      const line = t.name + " (" + t.tool_call_id + "): " + number(t.duration_ms) + " ms" + how + (t.error ? " \u00b7 error: " + t.error : t.is_error ? " \u00b7 error" : "");
      box.append(el("p", "tool-run", "Tool run: " + line));
      if (t.wire) box.append(exchange("Tool " + t.name + ": its server's exchange", t.wire));
    }
    for (const a of s.annotations || []) {
      box.append(el("p", "annotation", "Annotation on " + a.target + (a.author ? " by " + a.author : "") + ": " + a.summary));
    }
  }

  // -- one frame --------------------------------------------------------------------

  function caption(frame, s) {
    if (frame.phase === "prompt") return "The run starts with " + frame.shown + " message" + (frame.shown === 1 ? "" : "s") + ": the prompt.";
    if (frame.phase === "model") {
      if (frame.failed) return "Step " + frame.step + ", model phase: the call failed" + (data.run.error ? ": " + data.run.error : ".");
      const reply = data.messages[frame.shown - 1];
      const calls = reply && reply.calls ? reply.calls.length : 0;
      const what = calls ? "asked for " + calls + " tool call" + (calls === 1 ? "" : "s") : "answered";
      return "Step " + frame.step + ", model phase: " + (s ? s.model : "the model") + " read " + (s ? s.message_count : "the") + " messages and " + what + ".";
    }
    if (frame.phase === "tools") {
      const before = frames[at - 1] ? frames[at - 1].shown : 0;
      const results = frame.shown - before;
      return "Step " + frame.step + ", tools phase: " + results + " result" + (results === 1 ? "" : "s") + " appended, in call order.";
    }
    const structured = data.run.final_output === null ? "" : " \u2014 " + JSON.stringify(data.run.final_output);
    return "Done: " + (data.run.stop_reason || "the run ends here") + (data.run.error ? " \u2014 " + data.run.error : "") + structured + ".";
  }

  function diagram(frame) {
    const previous = frames[at - 1];
    let node = frame.phase;
    let from = previous ? (previous.phase === "model" ? "model" : previous.phase === "tools" ? "tools" : "prompt") : null;
    if (frame.phase === "done" && previous && previous.phase === "model" && previous.failed) node = "model";
    for (const g of document.querySelectorAll("#loop .node")) g.classList.remove("current", "failed", "finished");
    for (const g of document.querySelectorAll("#loop .edge")) {
      g.classList.remove("taken");
      g.querySelector("path").setAttribute("marker-end", "url(#arrow)");
    }
    const current = byId("node-" + node);
    current.classList.add("current");
    if (frame.failed || (frame.phase === "done" && node === "model")) current.classList.add("failed");
    if (node === "done") current.classList.add("finished");
    if (from && from !== node) {
      const edge = byId("edge-" + from + "-" + node);
      if (edge) {
        edge.classList.add("taken");
        edge.querySelector("path").setAttribute("marker-end", "url(#arrow-on)");
      }
    }
    byId("model-step").textContent = "(step " + frame.step + " of " + data.run.max_steps + ")";
    byId("done-reason").textContent = frame.phase === "done" ? data.run.stop_reason || "" : "";
  }

  function show(k) {
    at = Math.max(0, Math.min(frames.length - 1, k));
    const frame = frames[at];
    const before = at > 0 ? frames[at - 1].shown : 0;
    // only the items that change are touched: a long run has hundreds of messages
    const low = Math.min(before, marked[0], frame.shown);
    const high = Math.max(frame.shown, marked[1], listed);
    for (let i = low; i < high && i < messageItems.length; i++) {
      messageItems[i].hidden = i >= frame.shown;
      messageItems[i].classList.toggle("new", i >= before && i < frame.shown);
    }
    marked = [before, frame.shown];
    listed = frame.shown;
    byId("message-count").textContent = "(" + frame.shown + " of " + data.messages.length + ")";
    const s = steps.get(frame.step);
    for (const [index, row] of tokenRows) {
      row.hidden = index > frame.step;
      row.classList.toggle("current", index === frame.step);
    }
    byId("step-tokens").textContent = stepTokens(s);
    byId("caption").textContent = caption(frame, s);
    diagram(frame);
    wireView(s);
    byId("position").textContent = (at + 1) + " / " + frames.length;
    byId("scrub").value = String(at);
    byId("first").disabled = byId("previous").disabled = at === 0;
    byId("next").disabled = byId("last").disabled = at === frames.length - 1;
    const fresh = messageItems[frame.shown - 1];
    if (fresh && at > 0) {
      const list = byId("messages");
      const below = fresh.offsetTop + fresh.offsetHeight - (list.scrollTop + list.clientHeight);
      if (below > 0 || fresh.offsetTop < list.scrollTop) list.scrollTop = fresh.offsetTop + fresh.offsetHeight - list.clientHeight;
    }
  }

  function play() {
    if (timer !== null) {
      clearInterval(timer);
      timer = null;
      byId("play").textContent = "\u25b6 Play";
      return;
    }
    if (at === frames.length - 1) show(0);
    byId("play").textContent = "\u2016 Pause";
    timer = setInterval(() => {
      show(at + 1);
      if (at === frames.length - 1) play();
    }, 1200);
  }

  header();
  byId("scrub").max = String(frames.length - 1);
  byId("first").addEventListener("click", () => show(0));
  byId("previous").addEventListener("click", () => show(at - 1));
  byId("next").addEventListener("click", () => show(at + 1));
  byId("last").addEventListener("click", () => show(frames.length - 1));
  byId("play").addEventListener("click", play);
  byId("scrub").addEventListener("input", (e) => show(Number(e.target.value)));
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.target.tagName === "INPUT") return;
    if (e.target.tagName === "BUTTON" && (e.key === " " || e.key === "Enter")) return; // the button's own click
    if (e.target.closest("#messages, pre")) return; // in a region that scrolls, the keys scroll it
    const moves = { ArrowRight: 1, ArrowDown: 1, " ": 1, ArrowLeft: -1, ArrowUp: -1 };
    if (Object.hasOwn(moves, e.key)) show(at + moves[e.key]);
    else if (e.key === "Home") show(0);
    else if (e.key === "End") show(frames.length - 1);
    else return;
    e.preventDefault();
  });
  show(0);
})();
