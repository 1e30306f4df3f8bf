/** Classification metrics over a held-out set: accuracy, macro-averaged F1, and per-label precision/recall/F1. */

export interface LabelMetrics {
  label: string;
  precision: number;
  recall: number;
  f1: number;
  support: number;
}

export interface ClassificationMetrics {
  examples: number;
  accuracy: number;
  macro_f1: number;
  per_label: LabelMetrics[];
}

const ratio = (a: number, b: number) => (b === 0 ? 0 : a / b);

export function classificationMetrics(labels: string[], truth: number[], predicted: number[]): ClassificationMetrics {
  const tp = new Array(labels.length).fill(0);
  const fp = new Array(labels.length).fill(0);
  const fn = new Array(labels.length).fill(0);
  const support = new Array(labels.length).fill(0);
  let correct = 0;
  truth.forEach((t, i) => {
    const p = predicted[i];
    support[t]++;
    if (p === t) (correct++, tp[t]++);
    else (fp[p]++, fn[t]++);
  });
  const per_label = labels.map((label, k) => {
    const precision = ratio(tp[k], tp[k] + fp[k]);
    const recall = ratio(tp[k], tp[k] + fn[k]);
    return { label, precision, recall, f1: ratio(2 * precision * recall, precision + recall), support: support[k] };
  });
  // macro average over the labels that occur in the truth or the predictions (as sklearn's f1_score does)
  const present = per_label.filter((m, k) => m.support > 0 || fp[k] > 0);
  return {
    examples: truth.length,
    accuracy: ratio(correct, truth.length),
    macro_f1: ratio(present.reduce((a, m) => a + m.f1, 0), present.length),
    per_label,
  };
}
