"""A BaseException subclass raised by the graded function."""


class Escape(BaseException):
    pass


def nsw_allocation(instance):
    raise Escape("not an Exception")
