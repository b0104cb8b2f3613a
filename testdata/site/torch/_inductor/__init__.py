"""The fixture's compiler backend."""
from typing import Dict, Optional


def list_mode_options(mode: Optional[str] = None) -> Dict[str, object]:
    """Maps a torch.compile mode string to config flags."""
    mode_options = {
        "default": {},
        "reduce-overhead": {"triton.cudagraphs": True},
        "max-autotune-no-cudagraphs": {"max_autotune": True},
        "max-autotune": {"max_autotune": True, "triton.cudagraphs": True},
    }
    return mode_options[mode] if mode else {}
