"""Quiet exporters: their chatter is about their own internals, not about the user's model."""

import contextlib
import logging
import warnings


@contextlib.contextmanager
def quiet_exporter():
    """Keep the exporters' progress lines, notes about optional torchvision ops, the quantizer's advice (logged on
    the root logger) and deprecation notices of their own internals from the user's terminal: they say nothing about
    the user's model. Levels are restored afterwards."""
    names = ("torch.onnx", "torch.export", "torch._export", "onnxruntime", None)
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.filterwarnings("ignore", message=".*axis name.*", category=UserWarning)
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
