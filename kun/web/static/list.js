/* The thread list: GET /v1/threads, kept current from the firehose
   (GET /v1/events). Any event that may change a row refetches the list
   (debounced): the server's summary stays the one truth, and a thread
   created elsewhere appears. */
(function () {
  "use strict";
  var api = window.KunApi;
  var el = api.el;
  var pending = null;

  function row(t) {
    var title = t.title || t.thread_id;
    var status = t.status || "unknown";
    return el("li", { "data-thread-id": t.thread_id, "data-status": status }, [
      el("a", { href: "/threads/" + encodeURIComponent(t.thread_id), text: title }),
      el("span", { className: "status status-" + status, text: status }),
      el("span", { className: "workspace", title: "workspace", text: t.workspace || "" }),
      el("span", { className: "model", text: (t.provider ? t.provider + "/" : "") + (t.model || "default model") }),
      el("span", { className: "cost", text: api.cost(t.cost_usd) }),
      el("span", { className: "turns", text: t.turns + (t.turns === 1 ? " turn" : " turns") })
    ]);
  }

  function render(threads) {
    var list = document.getElementById("threads");
    var focused = document.activeElement && document.activeElement.closest("li");
    var focusedId = focused ? focused.dataset.threadId : null;
    var rows = threads.map(row);
    list.replaceChildren.apply(list, rows);
    document.getElementById("empty").hidden = threads.length > 0;
    if (focusedId) {
      var again = list.querySelector('li[data-thread-id="' + CSS.escape(focusedId) + '"] a');
      if (again) again.focus();
    }
  }

  async function load() {
    pending = null;
    try {
      var page = await api.call("GET", "/v1/threads?limit=500");
      render(page.threads);
    } catch (e) { /* shown in #error */ }
  }

  function soon() {
    if (pending === null) pending = setTimeout(load, 400);
  }

  function markRunning(data) {
    var li = document.querySelector('li[data-thread-id="' + CSS.escape(data.thread_id) + '"]');
    if (!li) return;
    li.dataset.status = "running";
    var status = li.querySelector(".status");
    status.textContent = "running";
    status.className = "status status-running";
  }

  function follow() {
    var source = new EventSource("/v1/events");
    source.onopen = function () { api.setConnection("open", "live"); load(); };
    source.onerror = function () {
      if (source.readyState === EventSource.CLOSED) {
        api.setConnection("closed", "disconnected; retrying");
        setTimeout(follow, 3000);
      } else {
        api.setConnection("reconnecting");
      }
    };
    ["thread_created", "thread_updated", "thread_forked", "thread_rewound",
     "thread_rewind_undone", "turn_started", "turn_completed", "turn_failed",
     "turn_aborted", "usage", "approval_requested", "approval_resolved",
     "user_input_requested", "user_input_resolved"].forEach(function (kind) {
      source.addEventListener(kind, function (message) {
        if (kind === "turn_started") markRunning(JSON.parse(message.data));
        soon();
      });
    });
  }

  async function create(e) {
    e.preventDefault();
    var body = {};
    var workspace = document.getElementById("new-workspace").value.trim();
    var title = document.getElementById("new-title").value.trim();
    if (workspace) body.workspace = workspace;
    if (title) body.title = title;
    try {
      var made = await api.call("POST", "/v1/threads", body);
      location.assign("/threads/" + encodeURIComponent(made.thread_id));
    } catch (err) { /* shown in #error */ }
  }

  document.getElementById("new-thread").addEventListener("submit", create);
  load();
  follow();
})();
