// Streams a chat page's turn from its SSE events: the turn already running when the page loaded (EventSource),
// and a message sent from the page, posted with Accept: text/event-stream so its events come back in the same
// response (the streaming POST). Every piece of text the agent or a tool produced is added with textContent
// (never innerHTML), so nothing it writes can become markup.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) { return; }
  var flow = document.getElementById("live-flow");
  var status = document.getElementById("live-status");
  var settled = (live.dataset.settled || "").split(" ");
  var text = null;  // the answer paragraph deltas append to; a tool call starts a new one
  var sending = false;

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
  var HANDLERS = {
    "message.delta": function (data) { appendDelta(data.delta || ""); status.textContent = "The agent is writing…"; },
    "tool.started": toolStarted,
    "tool.completed": toolCompleted,
    "approval.requested": approvalRequested,
    "clarify.requested": questionAsked
  };

  function ended(type, data) {
    status.textContent = ENDINGS[type] + (data && data.error && data.error.message ? " " + data.error.message : "");
    live.dataset.done = type;
  }

  // The turn running when the page loaded: its events from the start, through EventSource.
  if (live.dataset.turn && window.EventSource) {
    var source = new EventSource("/chat/turns/" + encodeURIComponent(live.dataset.turn) + "/events");
    Object.keys(HANDLERS).forEach(function (type) {
      source.addEventListener(type, function (event) { HANDLERS[type](JSON.parse(event.data)); });
    });
    Object.keys(ENDINGS).forEach(function (type) {
      source.addEventListener(type, function (event) { source.close(); ended(type, JSON.parse(event.data)); });
    });
    source.onerror = function () {
      if (source.readyState === EventSource.CLOSED) { status.textContent = "The live answer stopped; reload the page."; }
    };
  }

  // A message sent from this page: one POST whose response streams the new turn's events.
  var form = document.getElementById("send");
  var canStream = window.fetch && window.TextDecoder && window.ReadableStream && window.URLSearchParams;
  if (!form || !canStream) { return; }

  function startTurn(input) {
    live.textContent = "";
    var mine = el("div", "message user");
    mine.appendChild(el("span", "meta", "You"));
    mine.appendChild(el("p", "text", input));
    live.appendChild(mine);
    status = el("p", "meta", "The agent is working on an answer…");
    status.id = "live-status";
    live.appendChild(status);
    flow = el("div");
    flow.id = "live-flow";
    live.appendChild(flow);
    settled = [];
    text = null;
    delete live.dataset.done;
  }

  function dispatch(frame) {
    var type = "message", data = [];
    frame.split("\n").forEach(function (line) {
      if (line.indexOf("event:") === 0) { type = line.slice(6).trim(); }
      else if (line.indexOf("data:") === 0) { data.push(line.slice(5).replace(/^ /, "")); }
    });
    if (!data.length) { return false; }
    var payload = JSON.parse(data.join("\n"));
    if (HANDLERS[type]) { HANDLERS[type](payload); }
    if (ENDINGS[type]) { ended(type, payload); return true; }
    return false;
  }

  function follow(response) {
    var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "", done = false;
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) { return done; }
        buffer += decoder.decode(chunk.value, {stream: true});
        var frames = buffer.split("\n\n");
        buffer = frames.pop();
        frames.forEach(function (frame) { done = dispatch(frame) || done; });
        return done ? reader.cancel().then(function () { return true; }) : pump();
      });
    }
    return pump();
  }

  form.addEventListener("submit", function (event) {
    var running = live.dataset.turn && !live.dataset.done;
    var box = document.getElementById("message");
    if (running || sending || !box || !box.value.trim()) { return; }  // the plain form post handles these
    event.preventDefault();
    sending = true;
    var input = box.value;
    fetch(form.action, {
      method: "POST", credentials: "same-origin",
      headers: {"Accept": "text/event-stream", "Content-Type": "application/x-www-form-urlencoded"},
      body: new URLSearchParams(new FormData(form)).toString()
    }).then(function (response) {
      var kind = response.headers.get("content-type") || "";
      if (!response.ok || kind.indexOf("text/event-stream") !== 0) {
        return response.json().then(function (body) {
          throw new Error(body && body.error && body.error.message ? body.error.message : "The message was not sent.");
        }, function () { throw new Error("The message was not sent (HTTP " + response.status + ")."); });
      }
      box.value = "";
      live.dataset.turn = response.headers.get("x-turn-id") || "";
      startTurn(input);
      return follow(response).then(function (finished) {
        if (!finished) { window.location.reload(); }  // the stream dropped: the page picks the turn up again
      });
    }).catch(function (error) {
      var alert = el("p", "meta", error.message);
      alert.setAttribute("role", "alert");
      live.appendChild(alert);
    }).then(function () { sending = false; });
  });
})();
