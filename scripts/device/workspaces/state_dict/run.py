import os
import sys
import tempfile

import torch
from checkpoint import save
from model import build

compiled = torch.compile(build())
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
save(compiled, path)
try:
    build().load_state_dict(torch.load(path))
    print("0 of 1 loads failed")
    sys.exit(0)
except RuntimeError as e:
    print("1 of 1 loads failed: " + str(e).splitlines()[0][:160] + " " + " ".join(str(e).split()[-3:])[:80])
    sys.exit(1)
