'use strict';
// The compiled addons (node-gyp puts them in build/Release); see src/speaker_sys.c, src/v8_memory.cc, src/srtp_gcm.c.
module.exports = require('./build/Release/speaker_sys.node');
let v8Addon;
try {
  v8Addon = require('./build/Release/speaker_sys_v8.node');
} catch {
  v8Addon = undefined; // this node's V8 lacks the call (see src/v8_memory.cc): the memory keeper uses gc()
}
module.exports.memoryPressure = v8Addon ? v8Addon.memoryPressure : undefined;
let srtpAddon;
try {
  srtpAddon = require('./build/Release/speaker_sys_srtp.node');
} catch {
  srtpAddon = undefined; // node did not provide OpenSSL's symbols (see src/srtp_gcm.c): werift keeps node's crypto
}
module.exports.srtpGcm = srtpAddon;
// Not an addon: a library the systemd units preload into node (src/node_preload.c); its path, for checks and benches.
module.exports.nodePreloadPath = require('node:path').join(__dirname, 'build', 'Release', 'node_preload.so');
