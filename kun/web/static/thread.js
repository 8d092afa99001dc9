/* The thread page: follows GET /v1/threads/{id}/events with EventSource
   (live previews on; ?until=N for the thread as it was at seq N, read
   only), folds the events (fold.js), draws them (render.js) and wires the
   controls to the API. A reconnect resumes after the last seq: the browser
   sends Last-Event-ID by itself, and a new EventSource (after the server
   refused or restarted) asks ?after=<last seq>. */
(function () {
  "use strict";
  var api = window.KunApi;
  var threadId = decodeURIComponent(location.pathname.replace(/^\/threads\//, ""));
  var base = "/v1/threads/" + encodeURIComponent(threadId);
  var KINDS = ["thread_created", "thread_updated", "thread_forked", "thread_rewound",
               "thread_rewind_undone", "turn_queued", "turn_started", "turn_steered", "pipeline_stage",
               "turn_completed", "turn_failed", "turn_aborted", "item_created", "item_updated",
               "item_completed", "assistant_text_delta", "assistant_reasoning_delta",
               "tool_call_delta", "tool_call_started", "tool_call_finished",
               "tool_storm_suppressed", "approval_requested", "approval_resolved",
               "user_input_requested", "user_input_resolved", "subagent_started", "usage", "warning",
               "delegated_runtime", "delegated_checkpoint", "log_repaired", "preview"];

  var thread = null;
  var source = null;
  var until = null;
  var knownLast = 0;          // the thread's last seq as far as this page knows
  var scheduled = false;
  var retryDelay = 1000;
  var retryTimer = null;
  var $ = function (id) { return document.getElementById(id); };

  function readUntil() {
    var text = new URLSearchParams(location.search).get("until");
    until = text !== null && /^\d+$/.test(text) ? Number(text) : null;
  }

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    setTimeout(flush, 16);
  }

  function flush() {
    scheduled = false;
    var follow = nearBottom();
    window.KunRender.draw(thread, until !== null);
    document.body.dataset.lastSeq = String(thread.lastSeq);
    knownLast = Math.max(knownLast, thread.lastSeq);
    drawHeader();
    drawUsage();
    drawGoal();
    drawWarnings();
    drawControls();
    drawSlider();
    if (follow) window.scrollTo(0, document.body.scrollHeight);
  }

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  }

  function onMessage(message) {
    var event;
    try { event = JSON.parse(message.data); } catch (e) { return; }
    if (thread.apply(event)) schedule();
    if (until !== null && event.seq && event.seq >= until) stop("closed", "showing seq " + until);
  }

  function connect() {
    clearTimeout(retryTimer);
    var query = new URLSearchParams();
    if (until !== null) query.set("until", String(until)); else query.set("live", "1");
    if (thread.lastSeq) query.set("after", String(thread.lastSeq));
    var mine = new EventSource(base + "/events?" + query.toString());
    source = mine;
    api.setConnection(thread.lastSeq ? "reconnecting" : "connecting");
    mine.onopen = function () {
      retryDelay = 1000;
      api.setConnection("open", until === null ? "live" : "loading");
    };
    mine.onerror = function () {
      if (source !== mine) return;
      if (mine.readyState !== EventSource.CLOSED) { api.setConnection("reconnecting"); return; }
      if (until !== null) { stop("closed", "showing seq " + until); return; }
      api.setConnection("reconnecting", "reconnecting in " + Math.round(retryDelay / 1000) + " s");
      retryTimer = setTimeout(connect, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 15000);
    };
    KINDS.forEach(function (kind) { mine.addEventListener(kind, onMessage); });
  }

  function stop(state, words) {
    if (source) source.close();
    source = null;
    api.setConnection(state, words);
  }

  function start() {
    if (source) source.close();
    source = null;
    readUntil();
    thread = new window.KunFold.Thread();
    $("transcript").replaceChildren();
    document.body.dataset.lastSeq = "0";
    document.body.dataset.mode = until === null ? "live" : "past";
    flush();
    connect();
  }

  function drawHeader() {
    var s = thread.settings;
    var title = s.title || threadId;
    $("title").textContent = title;
    document.title = "kun — " + title;
    var bits = [s.workspace, (s.provider ? s.provider + "/" : "") + (s.model || "default model")];
    if (s.forked_from) bits.push("forked from " + s.forked_from.thread_id + " at seq " + s.forked_from.seq);
    $("meta").textContent = bits.filter(Boolean).join(" · ");
    var running = thread.runningTurn();
    var pending = document.querySelector('article[data-status="pending"]');
    $("activity").textContent = until !== null ? "past view (read only)"
      : pending ? "waiting for your answer" : running ? "turn running" : "idle";
  }

  function drawGoal() {
    var goal = thread.settings.goal;
    var todos = thread.settings.todos || [];
    $("plan-panel").hidden = !goal && !todos.length;
    $("goal").textContent = goal ? goal.objective + " (" + goal.status + ")" : "no goal";
    var items = todos.map(function (t) {
      return api.el("li", { "data-status": t.status, text: "[" + t.status.replace(/_/g, " ") + "] " + t.content });
    });
    $("todos").replaceChildren.apply($("todos"), items);
  }

  // Appended in seq order, never redrawn: the fold keeps each seq once,
  // and a fresh fold (past view, back to live) starts the list again.
  function drawWarnings() {
    var list = $("warning-list");
    var all = thread.warnings;
    if (list.children.length > all.length) list.replaceChildren();
    all.slice(list.children.length).forEach(function (w) {
      list.appendChild(api.el("li", { "data-seq": w.seq, "data-code": w.code }, [
        api.el("span", { className: "label", text: "Warning" }), " ",
        api.el("code", { text: w.code }), " ",
        api.el("a", { href: "?until=" + w.seq, text: "at seq " + w.seq }),
        api.el("p", { text: w.message })
      ]));
    });
    $("warnings").hidden = !all.length;
    $("warnings-h").textContent = "Thread warnings (" + all.length + ")";
  }

  // As kun replay says it: a thread whose calls had no price, or that ran
  // turns with no usage reported at all, cost something unknown, not $0.
  function costWords(u) {
    if (u.calls === u.unpriced && (u.calls || thread.turns.size)) return "cost unknown";
    return api.cost(u.cost) + (u.unpriced ? " + " + u.unpriced + " unpriced" : "");
  }

  function drawUsage() {
    var u = thread.usage;
    var rows = [["Input tokens", u.prompt], ["Output tokens", u.completion],
                ["Cached tokens", u.cached], ["Model calls", u.calls],
                ["Cost", costWords(u)]];
    var nodes = [];
    rows.forEach(function (r) {
      nodes.push(api.el("dt", { text: r[0] }), api.el("dd", { text: String(r[1]) }));
    });
    $("usage").replaceChildren.apply($("usage"), nodes);
  }

  function drawControls() {
    var past = until !== null;
    var running = thread.runningTurn();
    $("send").textContent = running ? "Steer" : "Start turn";
    $("send").disabled = past;
    $("prompt").disabled = past;
    $("interrupt").disabled = past || !running;
    $("plan-mode").disabled = past || !!running;
    $("attach").disabled = past || !!running;
    $("rewind-files").disabled = past;
    var select = $("rewind-turn");
    var chosen = select.value;
    var numbers = Array.from(thread.turns.keys());  // numbered as kun replay does: hidden turns count
    var options = thread.visibleTurns().map(function (turn) {
      var first = turn.items.map(function (id) { return thread.items.get(id); })
        .find(function (item) { return item && item.type === "user_message"; });
      var words = first ? (first.data.text || "").slice(0, 60) : "";
      var number = numbers.indexOf(turn.id) + 1;
      return api.el("option", { value: turn.id, text: "Turn " + number + " and later" + (words ? ": " + words : "") });
    });
    select.replaceChildren.apply(select, options);
    if (chosen && options.some(function (o) { return o.value === chosen; })) select.value = chosen;
    select.disabled = past || !options.length;
    $("rewind").disabled = past || !options.length || !!running;
    $("undo").disabled = past || !thread.rewinds.some(function (r) { return !r.undone; });
    $("fork").textContent = past ? "Fork at seq " + until : "Fork";
    $("fork").disabled = until === 0;  // a fork holds at least the thread's first event
    $("live").hidden = !past;
  }

  function drawSlider() {
    var slider = $("until");
    if (document.activeElement === slider && dragging) return;
    slider.max = String(knownLast);
    slider.value = String(until !== null ? until : thread.lastSeq);
    $("until-label").textContent = until !== null
      ? "seq " + until + " of " + knownLast + " (past view, read only)"
      : "live: seq " + thread.lastSeq;
    slider.setAttribute("aria-valuetext", $("until-label").textContent);
  }

  var dragging = false;
  var slideTimer = null;
  function onSlide() {
    dragging = true;
    var value = Number($("until").value);
    $("until-label").textContent = "seq " + value + " of " + knownLast;
    clearTimeout(slideTimer);
    slideTimer = setTimeout(function () { dragging = false; goTo(value); }, 300);
  }

  function goTo(value) {
    var url = new URL(location.href);
    if (value >= knownLast) url.searchParams.delete("until");
    else url.searchParams.set("until", String(value));
    if (url.href === location.href) return;
    history.pushState(null, "", url.href);
    start();
  }

  async function act(method, path, body) {
    try { return await api.call(method, path, body); } catch (e) { return null; }
  }

  function upload(file) {
    return new Promise(function (resolve, reject) {
      var reader = new FileReader();
      reader.onload = function () {
        var url = String(reader.result);
        resolve({ name: file.name, mime_type: /^[\w.+-]+\/[\w.+-]+$/.test(file.type) ? file.type : "application/octet-stream",
                  data: url.slice(url.indexOf(",") + 1) });
      };
      reader.onerror = function () { reject(reader.error); };
      reader.readAsDataURL(file);
    });
  }

  // Attachments go with a new turn only: steering takes text.
  async function send() {
    var text = $("prompt").value;
    if (!text.trim() || until !== null) return;
    var running = thread.runningTurn();
    $("send").disabled = true;
    var done;
    if (running) {
      done = await act("POST", base + "/turns/" + encodeURIComponent(running.id) + "/steer", { text: text });
    } else {
      var attachments = [];
      try {
        attachments = await Promise.all(Array.from($("attach").files).map(upload));
      } catch (err) {
        api.showError("cannot read the attached file: " + err.message);
      }
      done = await act("POST", base + "/turns", { text: text, plan_mode: $("plan-mode").checked,
                                                  attachments: attachments });
      if (done) $("attach").value = "";
    }
    $("send").disabled = false;
    if (done) $("prompt").value = "";
    $("prompt").focus();
  }

  function wire() {
    $("composer").addEventListener("submit", function (e) { e.preventDefault(); send(); });
    $("prompt").addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
    });
    $("interrupt").addEventListener("click", function () {
      var running = thread.runningTurn();
      if (running) act("POST", base + "/turns/" + encodeURIComponent(running.id) + "/interrupt", {});
    });
    $("rewind").addEventListener("click", function () {
      var turn = $("rewind-turn").value;
      if (turn) act("POST", base + "/rewind", { before_turn: turn, files: $("rewind-files").checked });
    });
    $("undo").addEventListener("click", function () { act("POST", base + "/rewind/undo", {}); });
    $("fork").addEventListener("click", async function () {
      var forked = await act("POST", base + "/fork", until !== null ? { at_seq: until } : {});
      if (forked) location.assign("/threads/" + encodeURIComponent(forked.thread_id));
    });
    $("live").addEventListener("click", function () { goTo(knownLast); });
    $("until").addEventListener("input", onSlide);
    $("until").addEventListener("change", onSlide);
    $("transcript").addEventListener("click", answer);
    $("transcript").addEventListener("keydown", function (e) {
      var id = e.target.dataset && e.target.dataset.answerFor;
      if (id && e.key === "Enter") { e.preventDefault(); submitAnswer(id, e.target.value); }
    });
    window.addEventListener("popstate", start);
  }

  function answer(e) {
    var b = e.target.closest("button");
    if (!b) return;
    var d = b.dataset;
    if (d.approve) decide(b, d.approve, "approved");
    else if (d.deny) decide(b, d.deny, "denied");
    else if (d.answerOption) submitAnswer(d.answerOption, b.textContent);
    else if (d.answerSubmit) {
      var input = document.querySelector('input[data-answer-for="' + CSS.escape(d.answerSubmit) + '"]');
      submitAnswer(d.answerSubmit, input ? input.value : "");
    }
  }

  // aria-disabled, not disabled: a disabled button drops the keyboard focus
  // to the page's top before the answer's event redraws the item.
  function decide(button, id, decision) {
    var group = button.closest(".buttons");
    if (group.dataset.busy) return;
    group.dataset.busy = "1";
    group.querySelectorAll("button").forEach(function (b) { b.setAttribute("aria-disabled", "true"); });
    act("POST", "/v1/approvals/" + encodeURIComponent(id), { decision: decision }).then(function (r) {
      if (r) return;
      delete group.dataset.busy;
      group.querySelectorAll("button").forEach(function (b) { b.removeAttribute("aria-disabled"); });
    });
  }

  function submitAnswer(id, text) {
    if (!text.trim()) { api.showError("type an answer (or pick an option) first"); return; }
    act("POST", "/v1/user-inputs/" + encodeURIComponent(id), { answer: text });
  }

  async function learnLast() {
    var view = await act("GET", base);
    if (view && typeof view.last_seq === "number") {
      knownLast = Math.max(knownLast, view.last_seq);
      drawSlider();
    }
  }

  wire();
  start();
  learnLast();
})();
