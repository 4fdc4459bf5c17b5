"""The spectrum of an image, as NVlabs' visualizer shows it beside StyleGAN3's aliasing studies: the magnitude of its
2-D discrete Fourier transform, zero frequency at the centre, on a log scale (the DC term is orders of magnitude above
the rest), stretched to the full grey range and enlarged to a readable size. It is of the image's file pixels (the
uint8 values generate writes), their channels averaged."""

import numpy as np

from ganforge.explore.features import enlarged
from ganforge.generate.writers import png_bytes


def log_spectrum(pixels: np.ndarray) -> np.ndarray:
    """uint8 [H, W, C] -> float64 [H, W]: log(1 + |FFT|) of the channels' mean, zero frequency at (H // 2, W // 2)."""
    grey = pixels.astype(np.float64).mean(axis=2)
    return np.log1p(np.abs(np.fft.fftshift(np.fft.fft2(grey))))


def spectrum_png(pixels: np.ndarray) -> bytes:
    """PNG of the log spectrum of `pixels`, from its least (black) to its largest (white) magnitude."""
    spectrum = log_spectrum(pixels)
    low, span = spectrum.min(), spectrum.max() - spectrum.min()
    grey = np.round((spectrum - low) / span * 255) if span > 0 else np.zeros_like(spectrum)
    return png_bytes(enlarged(grey.astype(np.uint8)))
