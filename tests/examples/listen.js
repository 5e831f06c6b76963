// Preloaded (node --require) into Metacontroller's examples/nodejs/server.js,
// which listens on port 80: EXAMPLES_PORTS (JSON, container port -> local
// port) moves it to a loopback port of ours, the server itself unmodified.
const http = require('http');
const ports = JSON.parse(process.env.EXAMPLES_PORTS || '{}');
const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (port, ...rest) {
  if (typeof port === 'number' && ports[port] !== undefined) {
    return listen.call(this, ports[port], '127.0.0.1', ...rest);
  }
  return listen.call(this, port, ...rest);
};
