"""Cudagraph trees: per-thread state stashed in a thread-local store."""
import threading

import torch

local = threading.local()
local.tree_manager_containers = {}
local.tree_manager_locks = {}

torch._C._stash_obj_in_tls("tree_manager_containers", local.tree_manager_containers)


def get_obj(local, attr_name):
    if hasattr(local, attr_name):
        return getattr(local, attr_name)
    assert torch._C._is_key_in_tls(attr_name)
    return None


def get_container(device_index: int):
    return get_obj(local, "tree_manager_containers").get(device_index)


def mark_step_begin() -> None:
    """Marks the start of a new step; outputs of earlier steps may be overwritten."""


class CUDAGraphTreeManager:
    @staticmethod
    def format_dealloc_msg(stack_trace) -> str:
        return (
            "Error: accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run. "
            f"Stack trace: {stack_trace}. "
            "To prevent overwriting, clone the tensor outside of torch.compile() "
            "or call torch.compiler.cudagraph_mark_step_begin() before each model invocation."
        )

    def try_end_curr_recording(self, function_id) -> None:
        if self.can_start_new_generation():
            self.dealloc_current_path_weakrefs()
            self.clear_current_path_state_and_set_to_none()

    def try_end_curr_execution(self) -> None:
        if self.can_start_new_generation():
            self.clear_current_path_state_and_set_to_none()

    def try_end_curr_warmup(self, function_id) -> None:
        if self.can_start_new_generation():
            self.dealloc_current_path_weakrefs()
            self.current_node = None

    def dealloc_current_path_weakrefs(self) -> None:
        for storage_ref in self.current_node.path_live_weakrefs():
            torch._C._set_storage_data_ptr_access_error_msg(storage_ref(), self.format_dealloc_msg(None))

    # Forwards run with their backwards pending keep the generation from
    # ending: the shape of torch 2.11's CUDAGraphTreeManager.
    def run(self, new_inputs, function_id):
        out = self._run(new_inputs, function_id)
        if self.mode == CompilationMode.FORWARD:
            self.running_forwards_with_pending_backwards = True
        elif self.mode == CompilationMode.BACKWARD:
            self.running_forwards_with_pending_backwards = False
        return out

    def can_start_new_generation(self) -> bool:
        if not self.in_new_torch_compile_invocation():
            return False
        if self.user_invoked_mark_step():
            return True
        return not self.running_forwards_with_pending_backwards

    def check_warn_on_unable_to_start_executing(self, function_id) -> None:
        "Warn if we in a potential loop where we are unable to hit fast path"
        self.warned_functions.add(function_id)
        warnings.warn(
            "Unable to hit fast path of CUDAGraphs because of pending, uninvoked backwards. "
            "Consider running with torch.no_grad() or using torch.compiler.cudagraph_mark_step_begin() "
            "before each model invocation"
        )
