#!/usr/bin/python3
"""A tiny MODNet-layout background-removal model for the tests (no trained weights can be fetched here).

    /usr/bin/python3 scripts/models/gen-tiny-matting.py   # -> test/fixtures/models/tiny-matting

The graph takes `input` [1,3,H,W] (normalised to -1..1 like MODNet) and returns a matte [1,1,H,W] in 0..1,
as MODNet's ONNX export does. Its weights are set by hand, not trained: the matte is
sigmoid(8 * (2*red - green - blue) + small 3x3 smoothing), so red things are "foreground" and blue or
gray backgrounds are "background". That makes the whole protocol testable (pre-processing, the ONNX run,
resizing the matte back, alpha compositing) with an answer known in advance.
"""
import json
import os
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import TORCHSCRIPT  # noqa: E402
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'test', 'fixtures', 'models', 'tiny-matting')


class Matte(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.key = torch.nn.Conv2d(3, 1, 1)
        self.smooth = torch.nn.Conv2d(1, 1, 3, padding=1, bias=False)
        with torch.no_grad():
            self.key.weight[:] = torch.tensor([[[[16.0]], [[-8.0]], [[-8.0]]]])
            self.key.bias[:] = torch.tensor([-2.0])
            self.smooth.weight[:] = torch.full((1, 1, 3, 3), 1.0 / 9.0)

    def forward(self, x):
        return torch.sigmoid(self.smooth(self.key(x)))


def main():
    os.makedirs(os.path.join(OUT, 'onnx'), exist_ok=True)
    m = Matte().eval()
    x = torch.rand(1, 3, 64, 64) * 2 - 1
    torch.onnx.export(m, (x,), os.path.join(OUT, 'onnx', 'model.onnx'), input_names=['input'], output_names=['output'],
                      dynamic_axes={'input': {0: 'batch', 2: 'height', 3: 'width'}, 'output': {0: 'batch', 2: 'height', 3: 'width'}}, opset_version=17, **TORCHSCRIPT)
    with open(os.path.join(OUT, 'config.json'), 'w') as f:
        json.dump({'model_type': 'modnet', 'architectures': ['MODNet']}, f, indent=2)
    with open(os.path.join(OUT, 'preprocessor_config.json'), 'w') as f:
        json.dump({'do_normalize': True, 'do_pad': False, 'do_rescale': True, 'do_resize': True,
                   'image_mean': [0.5, 0.5, 0.5], 'image_std': [0.5, 0.5, 0.5], 'resample': 2,
                   'rescale_factor': 1 / 255, 'size': {'width': 128, 'height': 128},
                   'feature_extractor_type': 'ImageFeatureExtractor'}, f, indent=2)


if __name__ == '__main__':
    main()
