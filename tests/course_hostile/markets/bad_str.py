"""An exception whose __str__ raises, at load."""


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


raise Unprintable()
