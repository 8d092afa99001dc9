/* A small, safe markdown renderer for model output. Every character of the
   source is HTML-escaped first; only the tags this file writes reach the
   page: headings, paragraphs, lists, block quotes, fenced code, inline
   code, bold, italic and links whose address is http(s) (anything else,
   javascript: included, stays text). Works in a browser and under node. */
(function (root) {
  "use strict";

  function escapeHtml(text) {
    return String(text)
      .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }

  // Text here is already escaped; code spans are lifted out first so that
  // nothing inside them is read as emphasis or links.
  function inline(escaped) {
    var codes = [];
    var text = escaped.replace(/`([^`]+)`/g, function (_, code) {
      codes.push("<code>" + code + "</code>");
      return "\u0000" + (codes.length - 1) + "\u0000";
    });
    text = text.replace(/\[([^\]]+)\]\((https?:\/\/[^\s()]+)\)/g, function (_, label, href) {
      return '<a href="' + href + '" rel="noopener noreferrer">' + label + "</a>";
    });
    text = text.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
    text = text.replace(/__([^_]+)__/g, "<strong>$1</strong>");
    text = text.replace(/(^|[^*\w])\*([^*\s][^*]*?)\*(?!\w)/g, "$1<em>$2</em>");
    text = text.replace(/(^|[^_\w])_([^_\s][^_]*?)_(?!\w)/g, "$1<em>$2</em>");
    return text.replace(/\u0000(\d+)\u0000/g, function (_, i) { return codes[Number(i)]; });
  }

  var FENCE = /^\s*(```|~~~)\s*([\w+-]*)\s*$/;
  var HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
  var BULLET = /^\s*[-*+]\s+(.*)$/;
  var NUMBER = /^\s*\d{1,9}[.)]\s+(.*)$/;
  var QUOTE = /^\s*&gt;\s?(.*)$/;

  function render(source) {
    var lines = escapeHtml(source || "").split(/\r?\n/);
    var out = [];
    var para = [];
    var list = null; // {tag, items}
    var quote = [];

    function flushPara() {
      if (para.length) out.push("<p>" + inline(para.join("\n")) + "</p>");
      para = [];
    }
    function flushList() {
      if (list) {
        out.push("<" + list.tag + ">" + list.items.map(function (item) {
          return "<li>" + inline(item) + "</li>";
        }).join("") + "</" + list.tag + ">");
      }
      list = null;
    }
    function flushQuote() {
      if (quote.length) out.push("<blockquote>" + inline(quote.join("\n")) + "</blockquote>");
      quote = [];
    }
    function flushAll() { flushPara(); flushList(); flushQuote(); }

    for (var i = 0; i < lines.length; i++) {
      var line = lines[i];
      var m = FENCE.exec(line);
      if (m) {
        flushAll();
        var code = [];
        var fence = m[1];
        for (i += 1; i < lines.length && lines[i].trim() !== fence; i++) code.push(lines[i]);
        var lang = m[2] ? ' data-lang="' + m[2] + '"' : "";
        out.push("<pre class=\"code\"" + lang + "><code>" + code.join("\n") + "</code></pre>");
        continue;
      }
      if (!line.trim()) { flushAll(); continue; }
      if ((m = HEADING.exec(line))) {
        flushAll();
        var level = m[1].length;
        out.push("<h" + level + ">" + inline(m[2]) + "</h" + level + ">");
        continue;
      }
      var bullet = BULLET.exec(line);
      var number = bullet ? null : NUMBER.exec(line);
      if (bullet || number) {
        var tag = bullet ? "ul" : "ol";
        flushPara(); flushQuote();
        if (list && list.tag !== tag) flushList();
        if (!list) list = { tag: tag, items: [] };
        list.items.push((bullet || number)[1]);
        continue;
      }
      if ((m = QUOTE.exec(line))) { flushPara(); flushList(); quote.push(m[1]); continue; }
      if (list && /^\s{2,}\S/.test(line)) {
        list.items[list.items.length - 1] += "\n" + line.trim();
        continue;
      }
      flushList(); flushQuote();
      para.push(line);
    }
    flushAll();
    return out.join("\n");
  }

  var api = { render: render, escapeHtml: escapeHtml };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.KunMarkdown = api;
})(typeof window !== "undefined" ? window : this);
