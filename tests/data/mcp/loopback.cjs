// Preloaded (`node --require`) into server-everything's streamable HTTP mode by
// tests/mcp_servers.py: it listens with `app.listen(PORT)` and has no host option or variable,
// so Node would take every interface. A listen given a port and no host binds 127.0.0.1 here.
"use strict";
const net = require("node:net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  if ((typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port))) && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
