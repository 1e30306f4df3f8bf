// The constants of MLAS's logistic function (MlasComputeLogistic), which ONNX Runtime's CPU Sigmoid and
// QuickGelu call: p(x) / q(x) + 0.5 on x clamped to [-18, 18], p odd of degree 9, q even of degree 10. Shared by
// the addon (kernels.c) and the WebAssembly build (wasm.c).
#ifndef SVC_LOGISTIC_H
#define SVC_LOGISTIC_H

#define LOGISTIC_LO (-18.0f)
#define LOGISTIC_HI 18.0f
#define ALPHA_9 4.37031012579801e-11f
#define ALPHA_7 1.15627324459942e-07f
#define ALPHA_5 6.08574864600143e-05f
#define ALPHA_3 8.51377133304701e-03f
#define ALPHA_1 2.48287947061529e-01f
#define BETA_10 6.10247389755681e-13f
#define BETA_8 5.76102136993427e-09f
#define BETA_6 6.29106785017040e-06f
#define BETA_4 1.70198817374094e-03f
#define BETA_2 1.16817656904453e-01f
#define BETA_0 9.93151921023180e-01f

#endif
