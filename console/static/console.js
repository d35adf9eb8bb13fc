// taskwire console: live updates. The pages work without this script.
// One EventSource per page; the server coalesces changes and sends a
// heartbeat. A task page reloads itself when its task changes (unless a
// form field has focus); the overview and the list show a notice with a
// reload button instead of reloading under the reader.
(function () {
  "use strict";
  var url = document.body.getAttribute("data-live");
  if (!url || !window.EventSource) { return; }
  var kind = document.body.getAttribute("data-live-kind");
  var box = document.getElementById("live");
  var es = new EventSource(url);
  es.addEventListener("change", function () {
    var active = document.activeElement;
    var editing = active && (active.tagName === "INPUT" || active.tagName === "SELECT" || active.tagName === "TEXTAREA");
    if (kind === "task" && !editing) { es.close(); window.location.reload(); return; }
    if (!box.hidden) { return; }
    box.textContent = "";
    box.appendChild(document.createTextNode("Tasks have changed since this page was loaded. "));
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = "Reload";
    b.addEventListener("click", function () { window.location.reload(); });
    box.appendChild(b);
    box.hidden = false;
  });
  window.addEventListener("pagehide", function () { es.close(); });
})();
