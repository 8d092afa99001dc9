/* The thread list: GET /v1/threads a page at a time ("Load older
   threads" follows next_cursor; ?limit=N on the page's address sets the
   page size, 100 by default), filtered by the server (?q=) so a filter
   finds threads not loaded yet. Kept current from the firehose
   (GET /v1/events): any event that may change a row refetches the first
   page (debounced) and merges it over the rows loaded below it, so the
   server's summary stays the one truth, a thread created elsewhere
   appears, and a thread on a later page that changes moves to the top. */
(function () {
  "use strict";
  var api = window.KunApi;
  var el = api.el;
  var pending = null;

  // As `kun threads` says it: turns that ran with no priced call (or no
  // usage reported at all) cost something unknown, not $0; "+" when some
  // calls had no price.
  function cost(t) {
    var u = t.usage || { calls: 0, unpriced_calls: 0 };
    if (u.calls === u.unpriced_calls && (u.calls || t.turns)) return api.cost(null);
    return api.cost(t.cost_usd) + (u.unpriced_calls ? "+" : "");
  }

  function row(t) {
    var title = t.title || t.thread_id;
    var status = t.status || "unknown";
    return el("li", { "data-thread-id": t.thread_id, "data-status": status }, [
      el("a", { href: "/threads/" + encodeURIComponent(t.thread_id), text: title }),
      el("span", { className: "status status-" + status, text: status }),
      el("span", { className: "workspace", title: "workspace", text: t.workspace || "" }),
      el("span", { className: "model", text: (t.provider ? t.provider + "/" : "") + (t.model || "default model") }),
      el("span", { className: "cost", text: cost(t) }),
      el("span", { className: "turns", text: t.turns + (t.turns === 1 ? " turn" : " turns") })
    ]);
  }

  // The list as loaded: rows newest activity first, the cursor of the
  // page after them (null: nothing older), the filter they answer.
  var PAGE = pageSize();
  var rows = [];
  var more = null;
  var query = "";
  var generation = 0;        // bumped by a new filter: older answers are dropped
  var queue = Promise.resolve();

  function pageSize() {
    var text = new URLSearchParams(location.search).get("limit");
    var n = text !== null && /^\d+$/.test(text) ? Number(text) : 100;
    return Math.min(Math.max(n, 1), 500);
  }

  function newer(a, b) {
    return a.updated_at > b.updated_at || (a.updated_at === b.updated_at && a.thread_id > b.thread_id);
  }

  function fetchPage(limit, cursor) {
    var q = new URLSearchParams({ limit: String(limit) });
    if (cursor) q.set("cursor", cursor);
    if (query) q.set("q", query);
    return api.call("GET", "/v1/threads?" + q.toString());
  }

  // One request at a time, in order: a refresh never crosses a "load more".
  function serial(job) {
    queue = queue.then(job).catch(function () { /* shown in #error */ });
    return queue;
  }

  /* The first `count` threads again (at least a page), page by page. */
  function reload(count) {
    var mine = generation;
    return serial(async function () {
      var got = [];
      var cursor = null;
      do {
        var page = await fetchPage(Math.min(500, Math.max(PAGE, count - got.length)), cursor);
        if (mine !== generation) return;
        got = got.concat(page.threads);
        cursor = page.next_cursor;
      } while (cursor && got.length < count);
      rows = got;
      more = cursor;
      render();
    });
  }

  /* After a live event: the first page again, the rows loaded below it
     kept. Every change moves a thread to the top, so when the first page
     ends on a row this list already had as it is, everything that changed
     is in that page; otherwise (many changes at once) all is reloaded. */
  function refresh() {
    pending = null;
    var mine = generation;
    serial(async function () {
      var page = await fetchPage(PAGE, null);
      if (mine !== generation) return;
      var fresh = page.threads;
      if (!page.next_cursor) { rows = fresh; more = null; render(); return; }
      var last = fresh[fresh.length - 1];
      var same = rows.some(function (r) { return r.thread_id === last.thread_id && r.updated_at === last.updated_at; });
      if (!same) { reload(rows.length); return; }
      var ids = new Set(fresh.map(function (r) { return r.thread_id; }));
      var tail = rows.filter(function (r) { return !ids.has(r.thread_id) && newer(last, r); });
      rows = fresh.concat(tail);
      if (!tail.length) more = page.next_cursor;
      render();
    });
  }

  function loadMore() {
    if (!more) return;
    var mine = generation;
    serial(async function () {
      if (!more) return;
      var page = await fetchPage(PAGE, more);
      if (mine !== generation) return;
      var ids = new Set(rows.map(function (r) { return r.thread_id; }));
      var added = page.threads.filter(function (r) { return !ids.has(r.thread_id); });
      var button = document.getElementById("more");
      var hadFocus = document.activeElement === button;
      rows = rows.concat(added);
      more = page.next_cursor;
      render();
      // The last page hides the button: keyboard users land on its first row.
      if (hadFocus && !more && added.length) {
        document.querySelector('#threads li[data-thread-id="' + CSS.escape(added[0].thread_id) + '"] a').focus();
      }
    });
  }

  function filter() {
    var text = document.getElementById("filter").value.trim();
    if (text === query) return;
    query = text;
    generation += 1;
    rows = [];
    more = null;
    reload(PAGE);
  }

  function render() {
    var list = document.getElementById("threads");
    var focused = document.activeElement && document.activeElement.closest("#threads li");
    var focusedId = focused ? focused.dataset.threadId : null;
    list.replaceChildren.apply(list, rows.map(row));
    document.getElementById("empty").hidden = rows.length > 0 || query !== "";
    document.getElementById("more").hidden = !more;
    var n = rows.length + (rows.length === 1 ? " thread" : " threads");
    document.getElementById("count").textContent = query
      ? (rows.length ? n + " matching \u201c" + query + "\u201d" : "No thread matches \u201c" + query + "\u201d") + (more ? ", more below" : "")
      : rows.length ? (more ? "The latest " + n + "; older ones below" : (rows.length > 1 ? "All " : "") + n) : "";
    if (focusedId) {
      var again = list.querySelector('li[data-thread-id="' + CSS.escape(focusedId) + '"] a');
      if (again) again.focus();
    }
  }

  function soon() {
    if (pending === null) pending = setTimeout(refresh, 400);
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
    source.onopen = function () { api.setConnection("open", "live"); reload(rows.length); };
    source.onerror = function () {
      if (source.readyState === EventSource.CLOSED) {
        api.setConnection("closed", "disconnected; retrying");
        setTimeout(follow, 3000);
      } else {
        api.setConnection("reconnecting");
      }
    };
    ["thread_created", "thread_updated", "thread_forked", "thread_rewound",
     "thread_rewind_undone", "turn_queued", "turn_started", "turn_completed", "turn_failed",
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

  var typing = null;
  document.getElementById("new-thread").addEventListener("submit", create);
  document.getElementById("filter").addEventListener("input", function () {
    clearTimeout(typing);
    typing = setTimeout(filter, 250);
  });
  document.getElementById("filter-form").addEventListener("submit", function (e) {
    e.preventDefault();
    clearTimeout(typing);
    filter();
  });
  document.getElementById("more").addEventListener("click", loadMore);
  reload(PAGE);
  follow();
})();
