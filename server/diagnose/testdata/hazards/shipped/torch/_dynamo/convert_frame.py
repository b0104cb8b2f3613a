"""Where Dynamo decides to compile a frame, or not."""


class FailOnRecompileLimitHit(Exception):
    pass


def check_recompile_limit(exceeded: bool, one_graph: bool, fail_on_limit: bool) -> None:
    if not exceeded:
        return
    if fail_on_limit:
        raise FailOnRecompileLimitHit(
            "Hard failure due to fail_on_recompile_limit_hit"
        )
    elif one_graph:
        raise FailOnRecompileLimitHit(
            "Hard failure due to fullgraph=True"
        )
