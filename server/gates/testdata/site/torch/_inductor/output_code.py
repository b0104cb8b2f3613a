from torch._inductor import config as ic


def uses_alias(is_backward):
    if is_backward and ic.triton.cudagraph_trees:
        return 1
    return 0


def unrelated(options):
    return options.debug


class Wrapper:
    """Members that never name a config module are blanked before parsing."""

    cfg = ic.triton
    copied = cfg.cudagraphs

    def unrelated(self):
        return "text"

    def reads(self):
        if ic.debug:
            return 1
        return 0


@ic.patch(debug=True)
class LateHeader:
    alias = ic

    def first(self):
        # Names config in a comment, so this member is parsed in the first round.
        return alias_free_member()

    def second(self):
        return 2


def alias_free_member():
    return None
