def get_obj():
    return None


get_obj()
