"""Names whose references, callers and symbols the benchmark asks for
(cmd/lspbench xref.go): a torch function a training script calls, and
one of the CUDA-graph internals it reaches."""
import torch
from torch._inductor import cudagraph_trees

torch.set_printoptions(precision=4)
cudagraph_trees.get_obj(None, "tree_manager_containers")
