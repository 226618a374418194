import { defineConfig } from 'vitest/config';

// Tests drive real parts (PulseAudio, WebRTC peers, amixer, HTTP), so they are slower than unit tests
// and share one sound server: files run one at a time, tests inside a file in order.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    // Every file starts from the same virtual sound card state (volumes, mutes, loopbacks).
    setupFiles: ['test/support/resetVirtualAudio.ts'],
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
