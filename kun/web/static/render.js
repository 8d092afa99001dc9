/* Draws a KunFold.Thread into #transcript (the DOM contract: one
   section.turn per visible turn, one article per item, its text in .body).
   Only what changed is redrawn: the turn list when the fold says its shape
   changed, and the items it marked dirty, so a half-typed answer or an
   open <details> survives the stream. Statuses are always words too. */
(function () {
  "use strict";
  var api = window.KunApi;
  var md = window.KunMarkdown;
  var el = api.el;

  var LABELS = { user_message: "You", assistant_text: "Assistant",
                 assistant_reasoning: "Reasoning", tool_call: "Tool call",
                 tool_result: "Tool result", approval: "Approval",
                 user_input: "Question", error: "Error", warning: "Warning",
                 plan: "Plan", compaction: "Compaction" };

  function html(tag, className, markup) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    node.innerHTML = markup; // markup comes from markdown.js: escaped first
    return node;
  }

  function pre(className, text) {
    return el("pre", { className: className }, [text]);
  }

  function diff(text) {
    var node = el("pre", { className: "diff" });
    text.split("\n").forEach(function (line, i) {
      var kind = line.startsWith("+") && !line.startsWith("+++") ? "add"
        : line.startsWith("-") && !line.startsWith("---") ? "del"
        : line.startsWith("@@") ? "hunk" : "ctx";
      if (i) node.appendChild(document.createTextNode("\n"));
      node.appendChild(el("span", { className: "line-" + kind, text: line }));
    });
    return node;
  }

  function argumentsText(item) {
    var args = item.data.arguments;
    if (args && typeof args === "object" && Object.keys(args).length) {
      return JSON.stringify(args, null, 2);
    }
    var raw = item.text + item.preview;
    try { return JSON.stringify(JSON.parse(raw), null, 2); } catch (e) { return raw; }
  }

  function body(item, ctx) {
    var d = item.data;
    var text = item.text + item.preview;
    switch (item.type) {
      case "user_message":
        return [el("p", { className: "plain", text: d.text || "" })];
      case "assistant_text":
        return [html("div", item.preview ? "md provisional" : "md", md.render(text))];
      case "assistant_reasoning": {
        var details = el("details", null, [el("summary", { text: "Reasoning (" + text.length + " characters)" }),
                                           html("div", "md", md.render(text))]);
        if (ctx.open) details.open = true;
        return [details];
      }
      case "tool_call": {
        var call = [el("p", { className: "tool-name", text: item.name || d.name || "tool" }),
                    pre("arguments", argumentsText(item))];
        if (d.side_thread) call.push(sideThread(d.side_thread, d.agent));
        return call;
      }
      case "tool_result": {
        var out = [];
        if (d.diff) out.push(diff(d.diff));
        out.push(pre(d.is_error ? "output error-output" : "output", (d.is_error ? "error: " : "") + (d.output || "")));
        return out;
      }
      case "approval": return approval(item, ctx);
      case "user_input": return question(item, ctx);
      case "plan": return [html("div", "md", md.render(d.markdown || ""))];
      case "compaction":
        return [el("p", { className: "note", text: "Earlier history summarized (" + (d.replaced_items || 0) + " items):" }),
                html("div", "md", md.render(d.summary || ""))];
      case "error": case "warning":
        return [el("p", { text: (d.code ? d.code + ": " : "") + (d.message || "") })];
      default:
        return [pre("raw", JSON.stringify(d))];
    }
  }

  // A sub-agent's side thread (delegate_task), linked: its own page shows
  // its turns as they run.
  function sideThread(id, agent) {
    return el("p", { className: "note side-thread" }, [
      document.createTextNode((agent ? "Sub-agent " + agent : "Read-only sub-agent") + " on "),
      el("a", { href: "/threads/" + encodeURIComponent(id), "data-side-thread": id, text: id })
    ]);
  }

  function approval(item, ctx) {
    var d = item.data;
    var out = [el("p", { text: "Run " + (d.tool_name || "a tool") + "? " + (d.summary || "") })];
    if (d.side_thread) out.push(sideThread(d.side_thread, null));
    if (d.diff) out.push(diff(d.diff));
    if (item.status === "pending" && !ctx.readOnly) {
      out.push(el("div", { className: "buttons" }, [
        el("button", { type: "button", "data-approve": d.id, text: "Approve" }),
        el("button", { type: "button", "data-deny": d.id, text: "Deny" })
      ]));
    } else if (item.status !== "pending") {
      out.push(el("p", { className: "note", text: "Answer: " + item.status + (d.reason ? " (" + d.reason + ")" : "") }));
    }
    return out;
  }

  function question(item, ctx) {
    var d = item.data;
    var out = [el("p", { className: "plain", text: d.question || "" })];
    if (d.side_thread) out.push(sideThread(d.side_thread, null));
    if (item.status === "pending" && !ctx.readOnly) {
      var inputId = "answer-" + d.id;
      var options = (d.options || []).map(function (option) {
        return el("button", { type: "button", "data-answer-option": d.id, text: option });
      });
      if (options.length) out.push(el("div", { className: "buttons options" }, options));
      out.push(el("div", { className: "answer" }, [
        el("label", { "for": inputId, text: "Your answer" }),
        el("input", { type: "text", id: inputId, "data-answer-for": d.id }),
        el("button", { type: "button", "data-answer-submit": d.id, text: "Answer" })
      ]));
    } else if (item.status !== "pending") {
      out.push(el("p", { className: "note", text: item.status === "answered" ? "Answered: " + (d.answer || "") : "Question " + item.status }));
    }
    return out;
  }

  function header(item) {
    var words = LABELS[item.type] || item.type;
    if (item.type === "tool_call" || item.type === "tool_result") words += " " + (item.name || item.data.name || "");
    if (item.type === "approval" && item.status === "pending") words += " needed";
    return el("header", { className: "item-head" }, [
      el("span", { className: "label", text: words }),
      el("span", { className: "status status-" + item.status, text: item.status.replace(/_/g, " ") + (item.preview ? " (streaming)" : "") })
    ]);
  }

  // What is said about an item rather than its text: kept out of .body,
  // which holds the item's text alone.
  function notes(item) {
    var d = item.data;
    var out = [];
    if (item.type !== "user_message") return out;
    if (d.steered) out.push(el("p", { className: "note", text: "steered into the running turn" }));
    if (d.goal_resume) out.push(el("p", { className: "note", text: "kun resumed the goal (attempt " + d.goal_resume + ")" }));
    (d.attachments || []).forEach(function (a) {
      out.push(el("p", { className: "note attachment", text: "attachment: " + a.name + " (" + a.mime_type + ")" }));
    });
    return out;
  }

  function drawItem(article, item, readOnly) {
    var details = article.querySelector("details");
    var ctx = { readOnly: readOnly, open: details ? details.open : false };
    var inner = el("div", { className: "body" }, body(item, ctx));
    var hadFocus = article.contains(document.activeElement);
    article.dataset.type = item.type;
    article.dataset.status = item.status;
    article.replaceChildren.apply(article, [header(item)].concat(notes(item), [inner]));
    if (hadFocus) {
      // The control that had focus is gone (an answered approval): keep
      // keyboard users where they were rather than dropping them at the top.
      var next = article.querySelector("button, input") || article;
      if (next === article) article.tabIndex = -1;
      next.focus();
    }
  }

  function section(turn, number) {
    var node = el("section", { className: "turn", "data-turn-id": turn.id,
                               "aria-label": "Turn " + number });
    node.appendChild(el("h2", { className: "turn-head" }, [
      el("span", { className: "turn-number", text: "Turn " + number }),
      el("span", { className: "status turn-status" })
    ]));
    node.appendChild(el("div", { className: "items" }));
    node.appendChild(el("p", { className: "turn-error", hidden: true }));
    return node;
  }

  /* Reconcile #transcript with the fold; returns nothing. */
  function draw(thread, readOnly) {
    var root = document.getElementById("transcript");
    var turns = thread.visibleTurns();
    if (thread.structural) {
      var existing = new Map();
      root.querySelectorAll(":scope > section.turn").forEach(function (node) {
        existing.set(node.dataset.turnId, node);
      });
      var wanted = turns.map(function (turn, i) {
        var node = existing.get(turn.id) || section(turn, i + 1);
        existing.delete(turn.id);
        node.querySelector(".turn-number").textContent = "Turn " + (i + 1);
        node.setAttribute("aria-label", "Turn " + (i + 1));
        syncItems(node.querySelector(".items"), turn, thread, readOnly);
        return node;
      });
      existing.forEach(function (node) { node.remove(); });
      wanted.forEach(function (node, i) {
        if (root.children[i] !== node) root.insertBefore(node, root.children[i] || null);
      });
    }
    thread.dirty.forEach(function (id) {
      var item = thread.items.get(id);
      var article = root.querySelector('article[data-item-id="' + CSS.escape(id) + '"]');
      if (item && article) drawItem(article, item, readOnly);
    });
    turns.forEach(function (turn) {
      var node = root.querySelector('section[data-turn-id="' + CSS.escape(turn.id) + '"]');
      if (!node || node.dataset.status === turn.status) return;
      node.dataset.status = turn.status;
      node.querySelector(".turn-status").textContent = turn.status;
      var error = node.querySelector(".turn-error");
      error.textContent = turn.error || "";
      error.hidden = !turn.error;
    });
    thread.dirty.clear();
    thread.structural = false;
  }

  function syncItems(list, turn, thread, readOnly) {
    var existing = new Map();
    list.querySelectorAll(":scope > article").forEach(function (node) {
      existing.set(node.dataset.itemId, node);
    });
    turn.items.forEach(function (id, i) {
      var node = existing.get(id);
      if (!node) {
        node = el("article", { "data-item-id": id });
        drawItem(node, thread.items.get(id), readOnly);
        thread.dirty.delete(id);
      }
      existing.delete(id);
      if (list.children[i] !== node) list.insertBefore(node, list.children[i] || null);
    });
    existing.forEach(function (node) { node.remove(); });
  }

  window.KunRender = { draw: draw };
})();
