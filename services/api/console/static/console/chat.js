// Streams the running turn of a chat page from its SSE events. Every piece of text the agent or a tool
// produced is added with textContent (never innerHTML), so nothing it writes can become markup.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !live.dataset.turn || !window.EventSource) { return; }
  var flow = document.getElementById("live-flow");
  var status = document.getElementById("live-status");
  var settled = (live.dataset.settled || "").split(" ");
  var text = null;  // the answer paragraph deltas append to; a tool call starts a new one

  function el(tag, cls, content) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (content !== undefined) { node.textContent = content; }
    return node;
  }

  function appendDelta(delta) {
    if (!text) {
      var box = el("div", "message assistant");
      box.appendChild(el("span", "meta", "Agent"));
      text = el("p", "text live-text");
      box.appendChild(text);
      flow.appendChild(box);
    }
    text.appendChild(document.createTextNode(delta));
  }

  function toolStarted(data) {
    text = null;
    var box = el("div", "tool", "Tool call: " + data.name + "(" + (data.arguments || "") + ") — running…");
    box.id = "tool-" + data.id;
    box.dataset.label = "Tool call: " + data.name + "(" + (data.arguments || "") + ")";
    flow.appendChild(box);
  }

  function toolCompleted(data) {
    var box = document.getElementById("tool-" + data.id);
    if (box) { box.textContent = box.dataset.label + (data.ok ? " — done" : " — failed"); }
  }

  function button(label, value, cls) {
    var b = el("button", cls, label);
    b.type = "submit"; b.name = "decision"; b.value = value;
    return b;
  }

  function approvalRequested(data) {
    if (settled.indexOf(data.approval_id) >= 0 || document.getElementById("approval-" + data.approval_id)) { return; }
    var token = document.querySelector('#send input[name="csrf_token"]');
    var box = el("div", "approval");
    box.id = "approval-" + data.approval_id;
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "Approval needed");
    var p = el("p"); p.appendChild(el("strong", null, "Approval needed:")); p.appendChild(document.createTextNode(" the agent wants to run"));
    box.appendChild(p);
    box.appendChild(el("pre", "tool", data.command));
    box.appendChild(el("p", "meta", data.reason || ""));
    var form = el("form", "row");
    form.method = "post";
    form.action = "/chat/approvals/" + encodeURIComponent(data.approval_id);
    [["csrf_token", token ? token.value : ""], ["session_id", live.dataset.session]].forEach(function (pair) {
      var input = el("input"); input.type = "hidden"; input.name = pair[0]; input.value = pair[1];
      form.appendChild(input);
    });
    form.appendChild(button("Approve", "approve"));
    form.appendChild(button("Approve for session", "session", "secondary"));
    form.appendChild(button("Deny", "deny", "danger"));
    box.appendChild(form);
    flow.appendChild(box);
    status.textContent = "The agent waits for your approval…";
  }

  function questionAsked(data) {
    if (settled.indexOf(data.clarification_id) >= 0 || document.getElementById("question-" + data.clarification_id)) { return; }
    var token = document.querySelector('#send input[name="csrf_token"]');
    var box = el("div", "approval");
    box.id = "question-" + data.clarification_id;
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", "The agent asks");
    var p = el("p"); p.appendChild(el("strong", null, "The agent asks:")); p.appendChild(document.createTextNode(" " + data.question));
    box.appendChild(p);
    var form = el("form", "row");
    form.method = "post";
    form.action = "/chat/clarifications/" + encodeURIComponent(data.clarification_id);
    [["csrf_token", token ? token.value : ""], ["session_id", live.dataset.session]].forEach(function (pair) {
      var input = el("input"); input.type = "hidden"; input.name = pair[0]; input.value = pair[1];
      form.appendChild(input);
    });
    (data.choices || []).forEach(function (choice, i) {
      var b = button(choice, choice, i ? "secondary" : null);
      b.name = "choice";
      form.appendChild(b);
    });
    box.appendChild(form);
    flow.appendChild(box);
    status.textContent = "The agent waits for your answer…";
  }

  var ENDINGS = {"turn.completed": "Answer complete.", "turn.failed": "The turn failed.", "turn.cancelled": "The turn was cancelled."};
  var source = new EventSource("/chat/turns/" + encodeURIComponent(live.dataset.turn) + "/events");

  function on(type, handler) {
    source.addEventListener(type, function (event) { handler(JSON.parse(event.data)); });
  }

  on("message.delta", function (data) { appendDelta(data.delta || ""); status.textContent = "The agent is writing…"; });
  on("tool.started", toolStarted);
  on("tool.completed", toolCompleted);
  on("approval.requested", approvalRequested);
  on("clarify.requested", questionAsked);
  Object.keys(ENDINGS).forEach(function (type) {
    on(type, function (data) {
      source.close();
      status.textContent = ENDINGS[type] + (data && data.error && data.error.message ? " " + data.error.message : "");
      live.dataset.done = type;
    });
  });
  source.onerror = function () {
    if (source.readyState === EventSource.CLOSED) { status.textContent = "The live answer stopped; reload the page."; }
  };
})();
