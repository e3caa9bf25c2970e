// Preloaded into the emulators (node --require ./loopback.cjs …): forces
// every server they start to listen on 127.0.0.1 only, whatever host the
// tool asks for (fauxqs hard-codes 0.0.0.0).
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args.length > 0 && typeof args[0] === "object" && args[0] !== null) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  } else if (typeof args[0] === "number" || typeof args[0] === "string") {
    const port = args[0];
    const rest = args.slice(1).filter((a) => typeof a === "function" || typeof a === "number");
    const cb = rest.find((a) => typeof a === "function");
    return listen.call(this, { port: Number(port), host: "127.0.0.1" }, cb);
  }
  return listen.apply(this, args);
};
