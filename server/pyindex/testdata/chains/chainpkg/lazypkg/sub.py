def inner(): pass
