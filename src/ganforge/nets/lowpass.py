"""Kaiser-windowed low-pass FIR filters for the alias-free generator (Karras et al. 2021, Sec. 3.2 and App. C).

Separable filters are windowed sincs; the radially symmetric ones of config R are windowed jincs (the 2D Fourier
transform of a disc). The Kaiser window's shape parameter comes from Kaiser's empirical formulas for the attenuation
reached with a given number of taps and transition width (J. F. Kaiser, "Nonrecursive digital filter design using
the I0-sinh window function", 1974; Oppenheim & Schafer, "Discrete-Time Signal Processing", Eq. 7.62-7.63), the
same design as scipy.signal.firwin(numtaps, cutoff, width=..., fs=...). Filters are designed in float64 and
returned as float32 tensors.
"""

import math

import numpy as np
import torch

# Points of the trapezoid rule for Bessel's integral; exact to float64 for arguments far below this (ours are < 40).
_BESSEL_POINTS = 256


def kaiser_attenuation(numtaps: int, width: float) -> float:
    """Stopband attenuation in dB of a Kaiser-windowed filter; `width` is the transition width / Nyquist."""
    return 2.285 * (numtaps - 1) * math.pi * width + 7.95


def kaiser_beta(attenuation: float) -> float:
    """The Kaiser window's beta that reaches `attenuation` dB."""
    if attenuation > 50:
        return 0.1102 * (attenuation - 8.7)
    if attenuation > 21:
        return 0.5842 * (attenuation - 21) ** 0.4 + 0.07886 * (attenuation - 21)
    return 0.0


def bessel_j1(z: np.ndarray) -> np.ndarray:
    """Bessel function of the first kind, order 1, from Bessel's integral J1(z) = 1/(2 pi) int cos(t - z sin t) dt.

    The integrand is periodic and analytic, so the trapezoid rule over one period converges exponentially (float64
    accuracy here; torch.special.bessel_j1 is only accurate to about 1e-7).
    """
    t = np.arange(_BESSEL_POINTS) * (2 * math.pi / _BESSEL_POINTS)
    return np.cos(t - np.multiply.outer(z, np.sin(t))).mean(axis=-1)


def _window(numtaps: int, width: float, fs: float) -> np.ndarray:
    return np.kaiser(numtaps, kaiser_beta(kaiser_attenuation(numtaps, width / (fs / 2))))


def lowpass_filter(numtaps: int, cutoff: float, width: float, fs: float, radial: bool = False) -> torch.Tensor | None:
    """Low-pass filter with `numtaps` taps, -6 dB at `cutoff`, transition band `width` wide, at sampling rate `fs`.

    Returns None for a single tap (the identity), a [numtaps] tensor for a separable filter (apply it along both
    axes), or a [numtaps, numtaps] tensor for a radially symmetric one. Taps sum to 1 (unit gain at DC).
    """
    assert numtaps >= 1
    if numtaps == 1:
        return None
    window = _window(numtaps, width, fs)
    if not radial:
        m = np.arange(numtaps) - (numtaps - 1) / 2
        taps = np.sinc(2 * cutoff / fs * m) * window  # ideal low-pass impulse response (up to scale), windowed
        return torch.as_tensor(taps / taps.sum(), dtype=torch.float32)
    assert numtaps % 2 == 0, "radial filters have an even number of taps, so that no tap lies at r = 0"
    x = (np.arange(numtaps) - (numtaps - 1) / 2) / fs
    r = np.hypot(*np.meshgrid(x, x))
    taps = bessel_j1(2 * math.pi * cutoff * r) / (math.pi * r) * np.outer(window, window)  # jinc: a disc's spectrum
    return torch.as_tensor(taps / taps.sum(), dtype=torch.float32)
