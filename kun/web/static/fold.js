/* The thread as its events say it is, folded in the browser (no DOM here;
   render.js draws it). It mirrors kun's reducer in what a reader sees:
   turns and their items, rewinds hiding turns, usage totals.

   Exactly once: a durable event whose seq is not above the last one folded
   is ignored (a resumed stream may repeat nothing, but this makes sure).
   Previews (seq 0, not in the log yet) are shown provisionally: each
   stream (delta kind, turn, item, call) counts the characters previewed
   and not yet durable, and each durable delta skips that many (at most its
   length) of its text: the rule of kun/server/stream.py. Characters are
   code points, as the server counts them. Works in a browser and under node. */
(function (root) {
  "use strict";

  var DELTAS = { assistant_text_delta: "assistant_text",
                 assistant_reasoning_delta: "assistant_reasoning",
                 tool_call_delta: "tool_call" };
  var OPEN = { in_progress: true, pending: true };
  var SETTLED = { completed: true, failed: true, aborted: true };

  function cpLength(text) {
    return /[\ud800-\udfff]/.test(text) ? Array.from(text).length : text.length;
  }
  function cpSlice(text, start) {
    return /[\ud800-\udfff]/.test(text) ? Array.from(text).slice(start).join("") : text.slice(start);
  }

  function Thread() {
    this.lastSeq = 0;
    this.settings = {};
    this.turns = new Map();
    this.items = new Map();
    this.rewinds = [];
    this.usage = { calls: 0, prompt: 0, completion: 0, cached: 0, reasoning: 0, cost: 0,
                   unpriced: 0 };
    this.warnings = [];          // thread-level: not inside an open turn
    this.warningsChanged = false;
    this.pending = new Map();
    this.dirty = new Set();      // item ids to redraw
    this.structural = true;      // turns or item order changed
    this.folding = false;        // inside a durable event's handler
  }

  Thread.prototype.turn = function (id) {
    var turn = this.turns.get(id);
    if (!turn) {
      turn = { id: id, status: "running", hidden: null, items: [], error: null };
      this.turns.set(id, turn);
      this.structural = true;
    }
    return turn;
  };

  Thread.prototype.item = function (id, type, turnId) {
    var item = this.items.get(id);
    if (!item) {
      item = { id: id, type: type, status: "in_progress", turnId: turnId, data: {},
               text: "", preview: "", name: "", durable: false };
      this.items.set(id, item);
      if (turnId) this.turn(turnId).items.push(id);
      this.structural = true;
    }
    if (this.folding) item.durable = true;
    this.dirty.add(id);
    return item;
  };

  Thread.prototype.runningTurn = function () {
    var found = null;
    this.turns.forEach(function (turn) {
      if (turn.status === "running" && turn.hidden === null) found = turn;
    });
    return found;
  };

  Thread.prototype.visibleTurns = function () {
    return Array.from(this.turns.values()).filter(function (t) { return t.hidden === null; });
  };

  function streamKey(e) {
    return [e.kind, e.turn_id || "", e.item_id, e.call_id || ""].join("\u0001");
  }

  /* Apply one message from the stream; returns false when it was a repeat. */
  Thread.prototype.apply = function (e) {
    if (!e.seq) { this.preview(e); return true; }
    if (e.seq <= this.lastSeq) return false;
    this.lastSeq = e.seq;
    var handler = HANDLERS[e.kind];
    this.folding = true;
    try {
      if (handler) handler.call(this, e);
    } finally {
      this.folding = false;
    }
    return true;
  };

  Thread.prototype.preview = function (e) {
    if (!DELTAS[e.kind]) return;
    var key = streamKey(e);
    var counts = this.pending.get(key) || [0, 0];
    var text = e.kind === "tool_call_delta" ? e.arguments || "" : e.text || "";
    var name = e.kind === "tool_call_delta" ? e.name || "" : "";
    this.pending.set(key, [counts[0] + cpLength(name), counts[1] + cpLength(text)]);
    var item = this.item(e.item_id, DELTAS[e.kind], e.turn_id);
    item.preview += text;
    if (name) item.name += name;
  };

  Thread.prototype.delta = function (e) {
    var call = e.kind === "tool_call_delta";
    var text = call ? e.arguments || "" : e.text || "";
    var name = call ? e.name || "" : "";
    var key = streamKey(e);
    var counts = this.pending.get(key);
    var item = this.item(e.item_id, DELTAS[e.kind], e.turn_id);
    var skipName = 0;
    if (counts) {
      skipName = Math.min(counts[0], cpLength(name));
      var skip = Math.min(counts[1], cpLength(text));
      var left = [counts[0] - skipName, counts[1] - skip];
      if (left[0] || left[1]) this.pending.set(key, left); else this.pending.delete(key);
      item.preview = cpSlice(item.preview, skip);
    }
    item.text += text;
    if (call && e.call_id) item.data.call_id = e.call_id;
    if (name && !skipName) item.name += name;
    else if (name) item.name += cpSlice(name, skipName);
  };

  Thread.prototype.put = function (e, completed) {
    var data = e.item;
    var item = this.item(data.id, data.type, e.turn_id);
    var streamed = data.type === "tool_call" ? data.arguments_text : data.text;
    item.data = data;
    item.type = data.type;
    item.status = data.status || "completed";
    if (data.name) item.name = data.name;
    if (completed) {
      item.preview = "";
      if (!e.text_from_deltas && typeof streamed === "string" && data.type !== "tool_call") {
        item.text = streamed;
      }
    } else if (streamed) {
      item.text = streamed;
    }
  };

  Thread.prototype.settle = function (e, status) {
    var turn = this.turn(e.turn_id);
    turn.status = status;
    this.structural = true;
    var self = this;
    var keep = [];
    // An item only ever previewed is not in the log (the server stopped
    // before it wrote it down): once the turn is over it is gone.
    turn.items.forEach(function (id) {
      var item = self.items.get(id);
      var gone = !item.durable || (e.discard && item.type !== "user_message");
      if (gone) { self.items.delete(id); return; }
      keep.push(id);
      item.preview = "";
      if (!OPEN[item.status]) return;
      self.dirty.add(id);
      if (item.type === "approval") item.status = "expired";
      else if (item.type === "user_input") item.status = "cancelled";
      else if (item.type === "tool_call") item.status = status === "aborted" ? "aborted" : "failed";
      else item.status = status;
    });
    turn.items = keep;
    this.pending.forEach(function (_, key) {
      if (key.split("\u0001")[1] === turn.id) self.pending.delete(key);
    });
  };

  Thread.prototype.threadWarning = function (seq, code, message) {
    this.warnings.push({ seq: seq, code: code, message: message });
    this.warningsChanged = true;
  };

  var HANDLERS = {
    thread_created: function (e) { this.settings = Object.assign({}, e.settings || {}); },
    thread_updated: function (e) {
      var self = this;
      ["workspace", "provider", "model", "approval_policy", "title", "goal", "todos"].forEach(function (k) {
        if (k in e) self.settings[k] = e[k];
      });
    },
    // Every turn not yet settled at the fork point ends there, whatever it
    // was doing (streaming, running a tool, waiting for an approval or an
    // answer), as kun's reducer ends it: aborted, reason "forked".
    thread_forked: function (e) {
      var self = this;
      this.settings.forked_from = { thread_id: e.source_thread_id, seq: e.source_seq };
      this.turns.forEach(function (turn) {
        if (SETTLED[turn.status]) return;
        self.settle({ turn_id: turn.id }, "aborted");
        turn.error = "aborted: forked";
      });
    },
    thread_rewound: function (e) {
      var hiding = false;
      var hidden = [];
      this.turns.forEach(function (turn) {
        if (turn.id === e.before_turn_id) hiding = true;
        if (hiding && turn.hidden === null) { turn.hidden = e.seq; hidden.push(turn.id); }
      });
      this.rewinds.push({ seq: e.seq, undone: false, hidden: hidden });
      this.structural = true;
    },
    thread_rewind_undone: function (e) {
      this.turns.forEach(function (turn) { if (turn.hidden === e.rewind_seq) turn.hidden = null; });
      this.rewinds.forEach(function (r) { if (r.seq === e.rewind_seq) r.undone = true; });
      this.structural = true;
    },
    // A queued turn waits with its message; its turn_started (same id)
    // makes it run, a turn_aborted cancels it before it ever ran.
    turn_queued: function (e) {
      var turn = this.turn(e.turn_id);
      turn.status = "queued";
      turn.model = e.model;
      turn.planMode = !!e.plan_mode;
      if (e.message) this.put({ turn_id: e.turn_id, item: e.message }, true);
    },
    turn_started: function (e) {
      var turn = this.turn(e.turn_id);
      turn.status = "running";
      turn.model = e.model;
      turn.planMode = !!e.plan_mode;
    },
    turn_completed: function (e) { this.settle(e, "completed"); },
    turn_failed: function (e) {
      this.settle(e, "failed");
      this.turn(e.turn_id).error = e.code + ": " + e.message;
    },
    turn_aborted: function (e) {
      this.settle(e, "aborted");
      this.turn(e.turn_id).error = "aborted: " + (e.reason || "interrupted");
    },
    item_created: function (e) { this.put(e, false); },
    item_updated: function (e) { this.put(e, false); },
    item_completed: function (e) { this.put(e, true); },
    assistant_text_delta: function (e) { this.delta(e); },
    assistant_reasoning_delta: function (e) { this.delta(e); },
    tool_call_delta: function (e) { this.delta(e); },
    tool_call_started: function (e) {
      var item = this.item(e.item_id, "tool_call", e.turn_id);
      item.status = "in_progress";
      item.started = true;
      if (e.name) item.name = e.name;
    },
    subagent_started: function (e) {
      var item = this.item(e.item_id, "tool_call", e.turn_id);
      item.data = item.data || { id: e.item_id, type: "tool_call" };
      item.data.side_thread = e.side_thread;
      item.data.agent = e.agent || null;
    },
    tool_call_finished: function (e) {
      var item = this.item(e.item_id, "tool_call", e.turn_id);
      item.status = e.status || "completed";
      item.durationMs = e.duration_ms || 0;
    },
    approval_requested: function (e) {
      var item = this.item(e.approval_id, "approval", e.turn_id);
      item.status = "pending";
      item.data = { id: e.approval_id, type: "approval", call_id: e.call_id,
                    tool_name: e.tool_name || "", summary: e.summary || "", diff: e.diff || "",
                    side_thread: e.side_thread || null };
    },
    approval_resolved: function (e) {
      var item = this.item(e.approval_id, "approval", e.turn_id);
      item.status = e.decision;
      item.data.reason = e.reason || null;
    },
    user_input_requested: function (e) {
      var item = this.item(e.request_id, "user_input", e.turn_id);
      item.status = "pending";
      item.data = { id: e.request_id, type: "user_input", question: e.question,
                    options: e.options || [], side_thread: e.side_thread || null };
    },
    user_input_resolved: function (e) {
      var item = this.item(e.request_id, "user_input", e.turn_id);
      item.status = e.status;
      item.data.answer = e.answer === undefined ? null : e.answer;
    },
    // Inside an open turn a warning is one of its items (id warning-<seq>,
    // as kun's reducer names it); else the thread's, as is a log repair.
    warning: function (e) {
      var turn = e.turn_id ? this.turns.get(e.turn_id) : null;
      if (turn && turn.status === "running") {
        var item = this.item("warning-" + e.seq, "warning", e.turn_id);
        item.status = "completed";
        item.data = { id: item.id, type: "warning", code: e.code, message: e.message };
        return;
      }
      this.threadWarning(e.seq, e.code, e.message);
    },
    log_repaired: function (e) {
      this.threadWarning(e.seq, "log_repaired", "kun cut an unreadable tail off the log on open (" +
        e.dropped_bytes + " bytes from line " + e.line + ")" + (e.reason ? ": " + e.reason : ""));
    },
    usage: function (e) {
      var u = e.usage || {};
      this.usage.calls += 1;
      this.usage.prompt += u.prompt_tokens || 0;
      this.usage.completion += u.completion_tokens || 0;
      this.usage.reasoning += u.reasoning_tokens || 0;
      this.usage.cached += u.cache_hit_tokens || 0;
      if (u.cost_usd === null || u.cost_usd === undefined) this.usage.unpriced += 1;
      else this.usage.cost += u.cost_usd;
      this.usageChanged = true;
    }
  };

  var api = { Thread: Thread, cpLength: cpLength, cpSlice: cpSlice };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.KunFold = api;
})(typeof window !== "undefined" ? window : this);
