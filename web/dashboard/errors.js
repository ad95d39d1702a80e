// Records script errors, failed asset loads and Content-Security-Policy violations on
// <html data-errors>, so that a person and the headless-browser test can see them. Loaded first,
// synchronously, before anything else can fail.
(function () {
  "use strict";
  function record(message) {
    var d = document.documentElement;
    d.dataset.errors = (d.dataset.errors ? d.dataset.errors + " | " : "") + message;
  }
  window.gpudocRecordError = record;
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) {
      record("failed to load " + (t.src || t.href));  // resource errors reach window only when captured
    } else {
      record(e.message || "error");
    }
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    record("unhandled rejection: " + (e.reason && e.reason.message ? e.reason.message : String(e.reason)));
  });
  document.addEventListener("securitypolicyviolation", function (e) {
    record("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline"));
  });
})();
