/**
 * Speech ranges from per-window speech probabilities, the way Silero VAD's `get_speech_timestamps` turns
 * them into ranges: speech starts where the probability reaches `threshold`, ends after it stays below
 * `threshold - 0.15` for `min_silence_duration_ms`; ranges shorter than `min_speech_duration_ms` are
 * dropped; each range is padded by `speech_pad_ms` on both sides (half the gap when neighbours are closer
 * than two pads); a range longer than `max_speech_duration_s` is split at its last long-enough pause, or
 * cut hard when it has none.
 */

export interface VadOptions {
  threshold: number;
  min_speech_duration_ms: number;
  min_silence_duration_ms: number;
  speech_pad_ms: number;
  max_speech_duration_s: number;
}

export const VAD_DEFAULTS: VadOptions = {
  threshold: 0.5,
  min_speech_duration_ms: 250,
  min_silence_duration_ms: 100,
  speech_pad_ms: 30,
  max_speech_duration_s: Infinity,
};

export interface SampleRange {
  start: number;
  end: number;
}

/** Ranges in samples. `probs[i]` is the probability of window i (samples i·window … (i+1)·window). */
export function speechRanges(
  probs: ArrayLike<number>,
  totalSamples: number,
  window: number,
  sampleRate: number,
  o: VadOptions,
): SampleRange[] {
  const minSpeech = (sampleRate * o.min_speech_duration_ms) / 1000;
  const pad = Math.round((sampleRate * o.speech_pad_ms) / 1000);
  const maxSpeech = sampleRate * o.max_speech_duration_s - window - 2 * pad;
  const minSilence = (sampleRate * o.min_silence_duration_ms) / 1000;
  const minSilenceAtMax = (sampleRate * 98) / 1000;
  const neg = Math.max(o.threshold - 0.15, 0.01);

  const ranges: SampleRange[] = [];
  let triggered = false, start = 0, tempEnd = 0, prevEnd = 0, nextStart = 0;
  const close = (end: number) => {
    ranges.push({ start, end });
  };
  for (let i = 0; i < probs.length; i++) {
    const p = probs[i]!, at = window * i;
    if (p >= o.threshold && tempEnd) {
      tempEnd = 0;
      if (nextStart < prevEnd) nextStart = at;
    }
    if (p >= o.threshold && !triggered) {
      triggered = true;
      start = at;
      continue;
    }
    if (triggered && at - start > maxSpeech) {
      if (prevEnd) {
        close(prevEnd);
        if (nextStart < prevEnd) triggered = false; // no speech since the pause: wait for the next start
        else start = nextStart;
        prevEnd = nextStart = tempEnd = 0;
      } else {
        close(at);
        prevEnd = nextStart = tempEnd = 0;
        triggered = false;
        continue;
      }
    }
    if (p < neg && triggered) {
      if (!tempEnd) tempEnd = at;
      if (at - tempEnd > minSilenceAtMax) prevEnd = tempEnd;
      if (at - tempEnd < minSilence) continue;
      if (tempEnd - start > minSpeech) close(tempEnd);
      prevEnd = nextStart = tempEnd = 0;
      triggered = false;
    }
  }
  if (triggered && totalSamples - start > minSpeech) close(totalSamples);

  for (let i = 0; i < ranges.length; i++) {
    const r = ranges[i]!;
    if (i === 0) r.start = Math.max(0, r.start - pad);
    const next = ranges[i + 1];
    if (next) {
      const gap = next.start - r.end;
      if (gap < 2 * pad) {
        r.end += Math.floor(gap / 2);
        next.start = Math.max(0, next.start - Math.floor(gap / 2));
      } else {
        r.end = Math.min(totalSamples, r.end + pad);
        next.start = Math.max(0, next.start - pad);
      }
    } else {
      r.end = Math.min(totalSamples, r.end + pad);
    }
  }
  return ranges;
}
