from typing import Any, Optional

lite_mode_options = {
    "fallback_by_default": True,
    "use_dce": False,
}


def list_mode_options(mode: Optional[str] = None, dynamic: Optional[bool] = None) -> dict[str, Any]:
    mode_options: dict[str, dict[str, bool]] = {
        "default": {},
        # lite backend for opt-in optimizations
        "lite": lite_mode_options,
        "reduce-overhead": {
            "triton.cudagraphs": True,
        },
        "max-autotune-no-cudagraphs": {
            "max_autotune": True,
            "coordinate_descent_tuning": True,
        },
        "max-autotune": {
            "max_autotune": True,
            "triton.cudagraphs": True,
            "coordinate_descent_tuning": True,
        },
    }
    return mode_options[mode] if mode else mode_options
