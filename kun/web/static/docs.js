/* /docs: the API document (/openapi.json) as a page. Everything is drawn
   with textContent: nothing in the document is ever read as HTML. */
(function () {
  "use strict";
  var el = window.KunApi.el;
  var PREFIX = "#/components/schemas/";

  function anchor(name) { return "schema-" + name.replace(/[^A-Za-z0-9_-]/g, "_"); }

  function limits(schema) {
    var said = [];
    if (schema.minimum !== undefined) said.push("≥ " + schema.minimum);
    if (schema.exclusiveMinimum !== undefined) said.push("> " + schema.exclusiveMinimum);
    if (schema.maximum !== undefined) said.push("≤ " + schema.maximum);
    if (schema.minLength !== undefined) said.push("length ≥ " + schema.minLength);
    if (schema.maxLength !== undefined) said.push("length ≤ " + schema.maxLength);
    if (schema.minItems !== undefined) said.push("items ≥ " + schema.minItems);
    if (schema.maxItems !== undefined) said.push("items ≤ " + schema.maxItems);
    if (schema.format) said.push(schema.format);
    if (schema.contentEncoding) said.push(schema.contentEncoding);
    return said.length ? " (" + said.join(", ") + ")" : "";
  }

  /* A schema in one line: a link for a named schema, the rest in words. */
  function kind(schema) {
    if (!schema) return el("span", { text: "any" });
    if (schema.$ref) {
      var name = schema.$ref.slice(PREFIX.length);
      return el("a", { href: "#" + anchor(name), text: name });
    }
    var parts = schema.anyOf || schema.oneOf;
    if (parts) {
      var span = el("span");
      parts.forEach(function (part, i) {
        if (i) span.appendChild(document.createTextNode(" | "));
        span.appendChild(kind(part));
      });
      return span;
    }
    if (schema.enum) return el("span", { text: schema.enum.map(function (v) { return JSON.stringify(v); }).join(" | ") });
    if (schema.const !== undefined) return el("span", { text: JSON.stringify(schema.const) });
    if (schema.type === "array") {
      var items = schema.prefixItems ? { anyOf: schema.prefixItems } : schema.items;
      return el("span", {}, ["array of ", kind(items), limits(schema)]);
    }
    if (schema.type === "object" && schema.additionalProperties) {
      return el("span", {}, ["object of ", kind(schema.additionalProperties)]);
    }
    return el("span", { text: (schema.type || "any") + limits(schema) });
  }

  function fields(schema) {
    var props = schema.properties || {};
    var required = schema.required || [];
    var names = Object.keys(props);
    if (!names.length) return el("p", { text: schema.type === "object" ? "no fields" : "" }, [kind(schema)]);
    var rows = names.map(function (name) {
      var prop = props[name];
      var notes = [];
      if (required.indexOf(name) >= 0) notes.push("required");
      if (prop.default !== undefined) notes.push("default " + JSON.stringify(prop.default));
      if (prop.description || prop.title) notes.push(prop.description || prop.title);
      return el("tr", {}, [el("td", {}, [el("code", { text: name })]), el("td", {}, [kind(prop)]),
                           el("td", { text: notes.join("; ") })]);
    });
    return el("table", { className: "fields" }, [
      el("thead", {}, [el("tr", {}, [el("th", { text: "field" }), el("th", { text: "type" }),
                                    el("th", { text: "notes" })])]),
      el("tbody", {}, rows)]);
  }

  function contents(content) {
    var list = el("ul");
    Object.keys(content || {}).forEach(function (media) {
      list.appendChild(el("li", {}, [el("code", { text: media }), " ", kind(content[media].schema)]));
    });
    return list;
  }

  function operation(path, method, op) {
    var id = "op-" + method + path.replace(/[^A-Za-z0-9]+/g, "-");
    var section = el("section", { id: id, className: "operation" }, [
      el("h2", {}, [el("code", { text: method.toUpperCase() + " " + path })]),
      el("p", { text: op.summary || "" })]);
    var params = op.parameters || [];
    if (params.length) {
      section.appendChild(el("h3", { text: "Parameters" }));
      section.appendChild(el("ul", {}, params.map(function (p) {
        return el("li", {}, [el("code", { text: p.name }), " (" + p.in + (p.required ? ", required" : "") + ") ",
                             kind(p.schema), p.description ? ": " + p.description : ""]);
      })));
    }
    if (op.requestBody) {
      section.appendChild(el("h3", { text: "Body" }));
      section.appendChild(contents(op.requestBody.content));
    }
    section.appendChild(el("h3", { text: "Answers" }));
    section.appendChild(el("ul", {}, Object.keys(op.responses).map(function (status) {
      var answer = op.responses[status];
      return el("li", {}, [el("strong", { text: status }), " " + (answer.description || ""),
                           answer.content ? contents(answer.content) : null]);
    })));
    return { id: id, node: section };
  }

  async function draw() {
    var doc = await window.KunApi.call("GET", "/openapi.json");
    var index = document.getElementById("index");
    var operations = document.getElementById("operations");
    Object.keys(doc.paths).forEach(function (path) {
      Object.keys(doc.paths[path]).forEach(function (method) {
        var drawn = operation(path, method, doc.paths[path][method]);
        operations.appendChild(drawn.node);
        index.appendChild(el("li", {}, [el("a", { href: "#" + drawn.id },
                                           [el("code", { text: method.toUpperCase() + " " + path })])]));
      });
    });
    var schemas = document.getElementById("schemas");
    var named = doc.components.schemas;
    Object.keys(named).sort().forEach(function (name) {
      var schema = named[name];
      schemas.appendChild(el("section", { id: anchor(name), className: "schema" }, [
        el("h3", {}, [el("code", { text: name })]),
        schema.description ? el("p", { text: schema.description }) : null,
        fields(schema)]));
    });
    if (location.hash) {
      var target = document.getElementById(location.hash.slice(1));
      if (target) target.scrollIntoView();
    }
  }

  draw();
})();
