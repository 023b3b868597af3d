// Preloaded into server-everything (node --require) by tests that would otherwise wait out one of
// its fixed delays (the research task's one-second stages have no argument and no setting): every
// setTimeout of the server runs FAST_CLOCK_SCALE times its delay (0.25: a second takes 250 ms).
// Everything else (status notifications, questions, the order of stages) is the server's own.
"use strict";
const scale = Number(process.env.FAST_CLOCK_SCALE);
if (Number.isFinite(scale) && scale > 0 && scale < 1) {
  const realSetTimeout = globalThis.setTimeout;
  globalThis.setTimeout = function scaledSetTimeout(callback, delay, ...args) {
    const ms = Number(delay) > 0 ? Number(delay) * scale : delay;
    return realSetTimeout(callback, ms, ...args);
  };
}
