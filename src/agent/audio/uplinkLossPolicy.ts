// How much packet loss the microphone's encoder protects against (opusCodec.ts: setExpectedLoss), from the far
// end's RTCP receiver reports: the fraction of our packets it lost since its previous report (about one a
// second from libwebrtc and from werift).
// - A report of 2 % or more turns protection on at once, sized to the loss (5..30 %), or raises it.
// - Protection goes off again only after CLEAN_REPORTS reports in a row under 1 % (~10 s): a link that loses
//   packets in bursts does not switch the encoder's mode back and forth.
// Anything that is not a fraction in 0..1 is ignored (a report is the far end's word, not ours).

const ON_AT = 0.02;
const CLEAN_BELOW = 0.01;
const CLEAN_REPORTS = 10;
const MIN_PERCENT = 5;
const MAX_PERCENT = 30;

export class UplinkLossPolicy {
  /** Loss protected against now, in percent; 0: none. */
  percent = 0;
  private cleanRun = 0;

  /** Takes one report; returns the new protection (percent) when it changes. */
  report(fractionLost: number): number | undefined {
    if (typeof fractionLost !== 'number' || !(fractionLost >= 0 && fractionLost <= 1)) return undefined;
    if (fractionLost >= ON_AT) {
      this.cleanRun = 0;
      const wanted = Math.min(MAX_PERCENT, Math.max(MIN_PERCENT, Math.ceil(fractionLost * 100)));
      if (wanted <= this.percent) return undefined;
      this.percent = wanted;
      return wanted;
    }
    if (this.percent === 0) return undefined;
    if (fractionLost >= CLEAN_BELOW) {
      this.cleanRun = 0;
      return undefined;
    }
    if (++this.cleanRun < CLEAN_REPORTS) return undefined;
    this.cleanRun = 0;
    this.percent = 0;
    return 0;
  }
}
