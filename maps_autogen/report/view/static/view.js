(function () {
  "use strict";
  // The pages' only script (allowed by its hash). It reads data from escaped data-* attributes,
  // writes text with textContent, and adds live markup only as elements parsed by DOMParser
  // (an inert document: nothing in it runs) from fragments the server escaped.
  var tbody = document.querySelector("#index-table tbody");
  var problems = Array.prototype.slice.call(document.querySelectorAll("section.problem"));
  var index = document.getElementById("index");
  var filters = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  // Laying out thousands of table rows takes seconds, so the index shows the matching rows a
  // page at a time (the CSS hides the rows past the first page until this script runs).
  var PAGE_ROWS = 500;
  var pageLimit = PAGE_ROWS;
  var more = document.getElementById("show-more");

  function rows() { return tbody ? Array.prototype.slice.call(tbody.rows) : []; }

  function matches(row) {
    return filters.every(function (select) {
      var want = select.value, key = select.getAttribute("data-filter");
      if (want === "") { return true; }
      var have = row.getAttribute("data-" + key) || "";
      if (key === "rollbacks") {
        if (want === "-") { return have === ""; }
        if (want === "*") { return have !== ""; }
        return (" " + have + " ").indexOf(" " + want + " ") >= 0;
      }
      return have === want;
    });
  }

  // Figure 4: where the reviewer's first decision went, over the shown problems that finished
  // (a failed one too: the server names its bar, "no usable review" when no review decided).
  function drawHistogram(shownRows) {
    var table = document.getElementById("feedback-histogram");
    if (!table) { return; }
    var counts = {}, total = 0;
    shownRows.forEach(function (row) {
      var target = row.getAttribute("data-feedback");
      if (row.getAttribute("data-verdict") === "unfinished" || !target) { return; }  // no decision yet is not "none"
      counts[target] = (counts[target] || 0) + 1;
      total += 1;
    });
    Array.prototype.forEach.call(table.querySelectorAll("tr[data-target]"), function (bar) {
      var count = counts[bar.getAttribute("data-target")] || 0;
      var meter = bar.querySelector("progress");
      meter.max = total || 1;
      meter.value = count;
      bar.querySelector(".count").textContent = String(count);
      bar.querySelector(".share").textContent = total ? (100 * count / total).toFixed(1) + "%" : "–";
    });
  }

  function applyFilters() {
    // Accuracy as the server's tally counts it: correct of the scored (failed and unfinished rows are not scored).
    var all = rows(), shown = [], scored = 0, correct = 0;
    all.forEach(function (row) {
      var keep = matches(row), verdict = row.getAttribute("data-verdict");
      row.hidden = !keep || shown.length >= pageLimit;
      if (keep) {
        shown.push(row);
        if (verdict !== "failed" && verdict !== "unfinished") { scored += 1; }
        if (verdict === "correct") { correct += 1; }
      }
    });
    var counter = document.getElementById("filter-count");
    if (counter) {
      var share = scored ? " (" + (100 * correct / scored).toFixed(2) + "% correct of " + scored + " scored)" : "";
      counter.textContent = "showing " + shown.length + " of " + all.length + share;
    }
    if (more) {
      var rest = shown.length - Math.min(shown.length, pageLimit);
      more.hidden = rest === 0;
      more.textContent = "show " + Math.min(rest, PAGE_ROWS) + " more (" + rest + " not listed yet)";
    }
    drawHistogram(shown);
  }

  function filtersChanged() { pageLimit = PAGE_ROWS; applyFilters(); }

  // With problem sections (one file), show either the index or the one problem the #anchor names.
  function route() {
    if (!problems.length) { return; }
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    var one = target !== null && problems.indexOf(target) >= 0;
    problems.forEach(function (section) { section.hidden = !(one && section === target); });
    if (index) { index.hidden = one; }
    if (one) { window.scrollTo(0, 0); }
  }

  function setDetails(button) {
    var scope = button.closest("section.problem") || document;
    var open = button.getAttribute("data-details") === "open";
    Array.prototype.forEach.call(scope.querySelectorAll("details"), function (d) { d.open = open; });
  }

  // ----- live updates (served pages only) ------------------------------------------------------

  function parseFragment(markup, inTable) {
    var wrapped = inTable ? "<table><tbody>" + markup + "</tbody></table>" : markup;
    var doc = new DOMParser().parseFromString("<!DOCTYPE html><body>" + wrapped, "text/html");
    var parent = inTable ? doc.querySelector("tbody") : doc.body;
    return Array.prototype.map.call(parent ? parent.children : [], function (node) { return document.importNode(node, true); });
  }

  function addFilterOptions(row) {
    filters.forEach(function (select) {
      var key = select.getAttribute("data-filter");
      var values = key === "rollbacks" ? (row.getAttribute("data-rollbacks") || "").split(" ") : [row.getAttribute("data-" + key) || ""];
      values.forEach(function (value) {
        if (value === "" || Array.prototype.some.call(select.options, function (o) { return o.value === value; })) { return; }
        var option = document.createElement("option");
        option.value = value;
        option.textContent = value;
        select.appendChild(option);
      });
    });
  }

  function appendTo(feed, markup) {
    var placeholder = feed.querySelector(".empty");
    if (placeholder) { placeholder.remove(); }
    if (feed.id === "index") {
      parseFragment(markup, true).forEach(function (row) {
        var old = tbody.querySelector('tr[data-key="' + CSS.escape(row.getAttribute("data-key") || "") + '"]');
        if (old) { old.replaceWith(row); } else { tbody.appendChild(row); }
        addFilterOptions(row);
      });
      applyFilters();
    } else {
      parseFragment(markup, false).forEach(function (node) { feed.appendChild(node); });
    }
  }

  function replaceById(markup) {
    parseFragment(markup, false).forEach(function (node) {
      var old = node.id ? document.getElementById(node.id) : null;
      if (old) { old.replaceWith(node); }
    });
    applyFilters();
  }

  // ----- a person in the chat (maps solve --human --view) ---------------------------------------
  // The feed's "human" events carry the pause the chat waits at (plain JSON, shown with
  // textContent); an answer is posted to the page's own server (its token is in the page's URL).

  function element(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }

  function humanPanel(feed) {
    var panel = document.getElementById("human-turn");
    if (!panel) {
      panel = element("section", null, "card human-turn");
      panel.id = "human-turn";
      panel.hidden = true;
      feed.parentNode.insertBefore(panel, feed.nextSibling);
    }
    return panel;
  }

  function postAnswer(pause, line, status) {
    status.textContent = "sending…";
    fetch(new URL("human", document.baseURI).href, {
      method: "POST", headers: {"Content-Type": "application/json"}, cache: "no-store",
      body: JSON.stringify({pause: pause, answer: line})
    }).then(function (response) {
      return response.json().then(function (body) { return {ok: response.ok, body: body}; });
    }).then(function (reply) {
      status.textContent = reply.ok ? "sent: " + reply.body.decision : "not taken: " + reply.body.error;
    }).catch(function () { status.textContent = "could not reach the server"; });
  }

  function control(tag, name, label) {
    var node = element(tag, label, null);
    node.setAttribute("data-human", name);
    if (tag === "button") { node.type = "button"; }
    return node;
  }

  function textInput(name, placeholder, limit) {
    var input = control("input", name, null);
    input.type = "text";
    input.maxLength = limit;
    input.placeholder = placeholder;
    return input;
  }

  function showPause(panel, data) {
    while (panel.firstChild) { panel.removeChild(panel.firstChild); }
    var state = data.state;
    if (!data.waiting || !state) {
      panel.hidden = !data.last;
      if (data.last) {
        panel.appendChild(element("p", data.last.source === "timeout" ?
          "Pause " + data.last.pause + ": nobody answered in time, so the chat went on as planned." :
          "Pause " + data.last.pause + " answered from the " + data.last.source + ": " +
          (data.last.line || "continue") + ". The chat goes on.", "muted human-status"));
      }
      return;
    }
    panel.hidden = false;
    var status = element("p", state.problem ? "not taken: " + state.problem : "", "human-status");
    var send = function (line) { postAnswer(state.pause, line, status); };
    panel.appendChild(element("h2", "Your turn (UserProxy)", null));
    panel.appendChild(element("p", "Pause " + state.pause + ", after the " + state.after_title +
      (state.review ? "'s review" : "'s turn") + ", round " + state.round, "muted"));
    if (state.answer !== null) { panel.appendChild(element("p", "Answer so far: " + state.answer, null)); }
    var dimensions = Object.keys(state.scores);
    if (dimensions.length) {
      panel.appendChild(element("p", "Scores: " + dimensions.map(function (d) { return d + " " + state.scores[d]; }).join(", "), null));
      var feedback = element("ul", null, "human-feedback");
      dimensions.forEach(function (d) {
        if (state.questions[d]) {
          var item = element("li", "Feedback on " + d + ": " + state.questions[d], null);
          item.setAttribute("data-dimension", d);
          feedback.appendChild(item);
        }
      });
      if (feedback.firstChild) { panel.appendChild(feedback); }
    }
    panel.appendChild(element("p", "If you continue: " + state.next, null));
    if (state.wait_s !== null && state.wait_s !== undefined) {
      panel.appendChild(element("p", "If nobody answers, the chat continues on its own " + state.wait_s +
        " s after this pause opened (human.wait_s).", "muted human-wait"));
    }
    var row = element("div", null, "human-row");
    // Before the final-answer step has answered, ending the chat ends it without an answer: said so.
    var withAnswer = state.answer !== null ? "with this answer" : "without an answer (none yet)";
    var go = control("button", "continue", state.ends ? "End " + withAnswer : "Continue");
    go.addEventListener("click", function () { send(""); });
    row.appendChild(go);
    if (!state.ends) {
      var stop = control("button", "stop", "Stop " + withAnswer);
      stop.addEventListener("click", function () { send("stop"); });
      row.appendChild(stop);
    }
    panel.appendChild(row);
    if (state.backs_left > 0 && state.steps.length) {
      var back = element("div", null, "human-row");
      var step = control("select", "step", null);
      state.steps.forEach(function (s) {
        var option = element("option", s.title, null);
        option.value = s.name;
        step.appendChild(option);
      });
      var question = textInput("question", "your question for that step", state.limits.answer_chars);
      var sendBack = control("button", "back", "Send back");
      sendBack.addEventListener("click", function () { send("back " + step.value + " " + question.value); });
      back.appendChild(element("span", "Send back", "muted"));
      back.appendChild(step);
      back.appendChild(question);
      back.appendChild(sendBack);
      panel.appendChild(back);
    }
    if (!state.ends) {
      var notes = element("div", null, "human-row");
      var note = textInput("note", "a note for every later step", state.limits.answer_chars);
      var add = control("button", "add-note", "Add note");
      add.addEventListener("click", function () { send("note " + note.value); });
      notes.appendChild(note);
      notes.appendChild(add);
      panel.appendChild(notes);
    }
    panel.appendChild(status);
  }

  function follow(feed) {
    var status = document.getElementById("live-status");
    function say(text) { if (status) { status.textContent = "live updates: " + text; } }
    var source = new EventSource(feed.getAttribute("data-live"));
    source.addEventListener("open", function () { say("on"); });
    source.addEventListener("error", function () { say("disconnected (retrying; the page keeps what it has)"); });
    source.addEventListener("append", function (event) { appendTo(feed, JSON.parse(event.data).html); });
    source.addEventListener("replace", function (event) { replaceById(JSON.parse(event.data).html); });
    source.addEventListener("reload", function () { source.close(); location.reload(); });
    source.addEventListener("human", function (event) { showPause(humanPanel(feed), JSON.parse(event.data)); });
    source.addEventListener("finished", function (event) { source.close(); say(JSON.parse(event.data).status); });
  }

  // While a call is under way the live page says who is thinking, and for how long.
  function tickThinking() {
    var marker = document.getElementById("thinking");
    var elapsed = marker && !marker.hidden ? marker.querySelector(".elapsed") : null;
    var since = marker ? Number(marker.getAttribute("data-since")) : 0;
    if (elapsed && since > 0) {
      elapsed.textContent = Math.max(0, Math.round((Date.now() - since) / 1000)) + " s";
    }
  }

  filters.forEach(function (select) { select.addEventListener("change", filtersChanged); });
  if (more) { more.addEventListener("click", function () { pageLimit += PAGE_ROWS; applyFilters(); }); }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-details]") : null;
    if (button) { setDetails(button); }
  });
  window.addEventListener("hashchange", route);
  applyFilters();
  route();
  Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), follow);
  if (document.querySelector("[data-live]")) { tickThinking(); window.setInterval(tickThinking, 1000); }
  document.documentElement.setAttribute("data-ready", "1");
})();
