/* The API client the pages share: JSON requests to this origin (the
   browser sends the kun_token cookie by itself), and #error for what went
   wrong, in words. */
(function () {
  "use strict";

  function showError(message) {
    var box = document.getElementById("error");
    if (!box) return;
    box.textContent = message || "";
    box.hidden = !message;
  }

  async function call(method, path, body) {
    var init = { method: method, credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    var response;
    try {
      response = await fetch(path, init);
    } catch (err) {
      showError("cannot reach the server: " + err.message);
      throw err;
    }
    var text = await response.text();
    var data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!response.ok) {
      var detail = data && data.error ? data.error.message : text || response.statusText;
      var message = method + " " + path + ": " + response.status + " " + detail;
      showError(message);
      throw new Error(message);
    }
    showError("");
    return data;
  }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        var value = attrs[key];
        if (value === null || value === undefined || value === false) return;
        if (key === "text") node.textContent = value;
        else if (key === "className") node.className = value;
        else node.setAttribute(key, value === true ? "" : String(value));
      });
    }
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function cost(value) {
    if (value === null || value === undefined) return "cost unknown";
    return "$" + Number(value).toFixed(value > 0 && value < 0.01 ? 4 : 2);
  }

  function setConnection(state, words) {
    var node = document.getElementById("connection");
    if (!node) return;
    node.dataset.state = state;
    node.textContent = words || state;
  }

  window.KunApi = { call: call, showError: showError, el: el, cost: cost,
                    setConnection: setConnection };
})();
