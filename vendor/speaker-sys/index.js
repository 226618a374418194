'use strict';
// The compiled addon (node-gyp puts it in build/Release); see src/speaker_sys.c.
module.exports = require('./build/Release/speaker_sys.node');
