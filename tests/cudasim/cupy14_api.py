"""The public API of CuPy 14 that cudasim's stand-in ``cupy`` may expose (see ``__init__``).

Generated from the CuPy 14.2.0 source distribution (PyPI ``cupy-14.2.0.tar.gz``, sha256
cfed725e612178cfbdbf62f4a3a598b60edecbbca718c0d4580c21a16ae4a62c), not written from memory:

* ``TOP_LEVEL``: every public name bound at the top level of ``cupy/__init__.py`` (imports, ``def``s,
  assignments, both branches of its NumPy-1/NumPy-2 shims; 482 names). A few of them (the
  NumPy-2 removals such as ``find_common_type``) only raise in CuPy; the stand-in has no NumPy twin for them.
* ``NDARRAY``: the public methods and properties of ``cupy._core.core._ndarray_base`` (``core.pyx``) and
  the ``readonly`` attributes of ``core.pxd`` (``size``, ``dtype``, ``data``, ``base``).

* ``FUNCTION_KWARGS``, ``UFUNC_KWARGS``, ``MATMUL_KWARGS``, ``NDARRAY_KWARGS``: the keyword arguments CuPy 14
  takes (parameter names of the Python-level ``def``s, ``ufunc.__call__`` in ``_core/_kernel.pyx``,
  ``_GUFunc.__call__`` in ``_core/_gufuncs.py``, the ``_ndarray_base`` methods).

To refresh for a later CuPy: parse that version's ``cupy/__init__.py`` the same way (an ``ast`` walk of the
module body) and re-list ``_ndarray_base``.
"""

TOP_LEVEL = frozenset("""
    AxisError ComplexWarning DataSource ElementwiseKernel Inf Infinity ModuleDeprecationWarning NAN NINF NZERO
    NaN PINF PZERO RankWarning RawKernel RawModule ReductionKernel TooHardError VisibleDeprecationWarning abs
    absolute acos acosh add all allclose alltrue amax amin angle any append apply_along_axis apply_over_axes
    arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argpartition argsort argwhere
    around array array2string array_equal array_equiv array_repr array_split array_str asanyarray asarray
    asarray_chkfinite ascontiguousarray asfarray asfortranarray asin asinh asnumpy astype atan atan2 atanh
    atleast_1d atleast_2d atleast_3d average bartlett base_repr binary_repr bincount bitwise_and bitwise_count
    bitwise_invert bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor blackman bool
    bool_ broadcast broadcast_arrays broadcast_shapes broadcast_to byte byte_bounds c_ can_cast cbrt cdouble
    ceil cfloat choose clear_memo clip column_stack common_type complex128 complex64 complex_ complexfloating
    compress concat concatenate conj conjugate convolve copy copysign copyto corrcoef correlate cos cosh
    count_nonzero cov cross csingle cuda cumprod cumproduct cumsum cumulative_prod cumulative_sum deg2rad
    degrees delete diag diag_indices diag_indices_from diagflat diagonal diff digitize
    disable_experimental_feature_warning disp divide divmod dot double dsplit dstack dtype e ediff1d einsum
    empty empty_like equal euler_gamma exceptions exp exp2 expand_dims expm1 extract eye fabs fft
    fill_diagonal find_common_type finfo fix flatiter flatnonzero flip fliplr flipud float16 float32 float64
    float_ float_power floating floor floor_divide fmax fmin fmod format_float_positional
    format_float_scientific format_parser frexp fromDlpack from_dlpack frombuffer fromfile fromfunction
    fromiter fromstring full full_like fuse gcd generic genfromtxt get_array_module get_array_wrap
    get_default_memory_pool get_default_pinned_memory_pool get_printoptions gradient greater greater_equal
    half hamming hanning heaviside histogram histogram2d histogramdd hsplit hstack hypot i0 identity iinfo
    imag in1d index_exp indices inexact inf infty inner int16 int32 int64 int8 int_ intc integer interp
    intersect1d intp invert is_available isclose iscomplex iscomplexobj isdtype isfinite isfortran isin isinf
    isnan isneginf isposinf isreal isrealobj isscalar issctype issubclass_ issubdtype issubsctype iterable ix_
    kaiser kron lcm ldexp left_shift less less_equal lexsort linalg linspace load loadtxt log log10 log1p log2
    logaddexp logaddexp2 logical_and logical_not logical_or logical_xor logspace long longlong
    make_aligned_dtype mask_indices matmul matrix_transpose max maximum may_share_memory mean median memoize
    meshgrid mgrid min min_scalar_type minimum mintypecode mod modf moveaxis msort multiply nan nan_to_num
    nanargmax nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin nanprod nanstd nansum nanvar
    ndarray ndim ndindex negative newaxis nextafter nonzero not_equal number obj2sctype ogrid ones ones_like
    outer packbits pad partition percentile permute_dims pi piecewise place poly poly1d polyadd polyfit
    polymul polynomial polysub polyval positive pow power printoptions prod product promote_types ptp put
    put_along_axis putmask quantile r_ rad2deg radians random ravel ravel_multi_index real real_if_close
    reciprocal remainder repeat require reshape resize result_type right_shift rint roll rollaxis roots rot90
    round round_ row_stack s_ safe_eval save savetxt savez savez_compressed sctype2char searchsorted select
    set_printoptions set_string_function setdiff1d setxor1d shape shares_memory short show_config sign signbit
    signedinteger sin sinc single singlecomplex sinh size sometrue sort sort_complex split sqrt square squeeze
    stack std subtract sum swapaxes take take_along_axis tan tanh tensordot testing tile trace transpose
    trapezoid trapz tri tril tril_indices tril_indices_from trim_zeros triu triu_indices triu_indices_from
    true_divide trunc typename ubyte ufunc uint uint16 uint32 uint64 uint8 uintc uintp ulong ulonglong union1d
    unique unique_all unique_counts unique_inverse unique_values unpackbits unravel_index unsignedinteger
    unwrap ushort vander var vdot vectorize vsplit vstack where who zeros zeros_like
""".split())

NDARRAY = frozenset("""
    T all any argmax argmin argpartition argsort astype base byteswap choose clip compress conj conjugate copy
    cstruct cumprod cumsum data device diagonal dot dtype dump dumps fill flags flat flatten get get_pointer
    imag is_host_accessible item itemsize mT max mdspan mean min nbytes ndim nonzero partition prod ptp put
    ravel real reduced_view repeat reshape round scatter_add scatter_max scatter_min searchsorted set shape
    size sort squeeze std strides sum swapaxes take toDlpack tobytes tofile tolist trace transpose var view
""".split())


# keyword arguments CuPy 14 accepts, by function: the parameter names of the Python-level definition (``def`` in
# the module ``cupy/__init__.py`` imports it from; functions taking ``**kwargs`` and Cython-level ones are left
# out, and are not checked)
FUNCTION_KWARGS = {
    'all': ('a', 'axis', 'out', 'keepdims'),
    'allclose': ('a', 'b', 'rtol', 'atol', 'equal_nan'),
    'amax': ('a', 'axis', 'out', 'keepdims'),
    'amin': ('a', 'axis', 'out', 'keepdims'),
    'angle': ('z', 'deg'),
    'any': ('a', 'axis', 'out', 'keepdims'),
    'append': ('arr', 'values', 'axis'),
    'apply_over_axes': ('func', 'a', 'axes'),
    'arange': ('start', 'stop', 'step', 'dtype'),
    'argmax': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'argmin': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'argpartition': ('a', 'kth', 'axis'),
    'argsort': ('a', 'axis', 'kind'),
    'argwhere': ('a',),
    'around': ('a', 'decimals', 'out'),
    'array': ('obj', 'dtype', 'copy', 'order', 'subok', 'ndmin', 'blocking'),
    'array_equal': ('a1', 'a2', 'equal_nan'),
    'array_equiv': ('a1', 'a2'),
    'array_repr': ('arr', 'max_line_width', 'precision', 'suppress_small'),
    'array_split': ('ary', 'indices_or_sections', 'axis'),
    'array_str': ('arr', 'max_line_width', 'precision', 'suppress_small'),
    'asanyarray': ('a', 'dtype', 'order', 'copy', 'blocking'),
    'asarray': ('a', 'dtype', 'order', 'copy', 'blocking'),
    'asarray_chkfinite': ('a', 'dtype', 'order'),
    'ascontiguousarray': ('a', 'dtype'),
    'asfarray': ('a', 'dtype'),
    'asfortranarray': ('a', 'dtype'),
    'astype': ('copy',),
    'atleast_1d': (),
    'atleast_2d': (),
    'atleast_3d': (),
    'average': ('a', 'axis', 'weights', 'returned', 'keepdims'),
    'bartlett': ('M',),
    'bincount': ('x', 'weights', 'minlength'),
    'blackman': ('M',),
    'broadcast_arrays': (),
    'broadcast_to': ('array', 'shape'),
    'byte_bounds': ('a',),
    'choose': ('a', 'choices', 'out', 'mode'),
    'clip': ('a', 'a_min', 'a_max', 'out'),
    'column_stack': ('tup',),
    'compress': ('condition', 'a', 'axis', 'out'),
    'concatenate': ('tup', 'axis', 'out', 'dtype', 'casting'),
    'convolve': ('a', 'v', 'mode'),
    'copy': ('a', 'order'),
    'copyto': ('dst', 'src', 'casting', 'where'),
    'corrcoef': ('a', 'y', 'rowvar', 'bias', 'ddof', 'dtype'),
    'correlate': ('a', 'v', 'mode'),
    'count_nonzero': ('a', 'axis'),
    'cov': ('a', 'y', 'rowvar', 'bias', 'ddof', 'fweights', 'aweights', 'dtype'),
    'cross': ('a', 'b', 'axisa', 'axisb', 'axisc', 'axis'),
    'cumprod': ('a', 'axis', 'dtype', 'out'),
    'cumproduct': ('a', 'axis', 'dtype', 'out'),
    'cumsum': ('a', 'axis', 'dtype', 'out'),
    'cumulative_prod': ('axis', 'dtype', 'out', 'include_initial'),
    'cumulative_sum': ('axis', 'dtype', 'out', 'include_initial'),
    'delete': ('arr', 'indices', 'axis'),
    'diag': ('v', 'k'),
    'diag_indices': ('n', 'ndim'),
    'diag_indices_from': ('arr',),
    'diagflat': ('v', 'k'),
    'diagonal': ('a', 'offset', 'axis1', 'axis2'),
    'diff': ('a', 'n', 'axis', 'prepend', 'append'),
    'digitize': ('x', 'bins', 'right'),
    'dot': ('a', 'b', 'out'),
    'dsplit': ('ary', 'indices_or_sections'),
    'dstack': ('tup',),
    'ediff1d': ('arr', 'to_end', 'to_begin'),
    'empty': ('shape', 'dtype', 'order'),
    'empty_like': ('prototype', 'dtype', 'order', 'subok', 'shape'),
    'expand_dims': ('a', 'axis'),
    'extract': ('condition', 'a'),
    'eye': ('N', 'M', 'k', 'dtype', 'order'),
    'fill_diagonal': ('a', 'val', 'wrap'),
    'flatnonzero': ('a',),
    'flip': ('a', 'axis'),
    'fliplr': ('a',),
    'flipud': ('a',),
    'full': ('shape', 'fill_value', 'dtype', 'order'),
    'full_like': ('a', 'fill_value', 'dtype', 'order', 'subok', 'shape'),
    'gradient': ('f', 'axis', 'edge_order'),
    'hamming': ('M',),
    'hanning': ('M',),
    'histogram': ('x', 'bins', 'range', 'density', 'weights'),
    'histogram2d': ('x', 'y', 'bins', 'range', 'weights', 'density'),
    'histogramdd': ('sample', 'bins', 'range', 'weights', 'density'),
    'hsplit': ('ary', 'indices_or_sections'),
    'hstack': ('tup', 'dtype', 'casting'),
    'identity': ('n', 'dtype'),
    'imag': ('val',),
    'in1d': ('ar1', 'ar2', 'assume_unique', 'invert'),
    'indices': ('dimensions', 'dtype'),
    'inner': ('a', 'b'),
    'interp': ('x', 'xp', 'fp', 'left', 'right', 'period'),
    'intersect1d': ('arr1', 'arr2', 'assume_unique', 'return_indices'),
    'isclose': ('a', 'b', 'rtol', 'atol', 'equal_nan'),
    'iscomplex': ('x',),
    'iscomplexobj': ('x',),
    'isfortran': ('a',),
    'isin': ('element', 'test_elements', 'assume_unique', 'invert'),
    'isneginf': ('x', 'out'),
    'isposinf': ('x', 'out'),
    'isreal': ('x',),
    'isrealobj': ('x',),
    'ix_': (),
    'kaiser': ('M', 'beta'),
    'kron': ('a', 'b'),
    'lexsort': ('keys',),
    'linspace': ('start', 'stop', 'num', 'endpoint', 'retstep', 'dtype', 'axis'),
    'load': ('file', 'mmap_mode', 'allow_pickle'),
    'logspace': ('start', 'stop', 'num', 'endpoint', 'base', 'dtype', 'axis'),
    'mask_indices': ('n', 'mask_func', 'k'),
    'matrix_transpose': (),
    'max': ('a', 'axis', 'out', 'keepdims'),
    'may_share_memory': ('a', 'b', 'max_work'),
    'mean': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'median': ('a', 'axis', 'out', 'overwrite_input', 'keepdims'),
    'min': ('a', 'axis', 'out', 'keepdims'),
    'moveaxis': ('a', 'source', 'destination'),
    'msort': ('a',),
    'nan_to_num': ('x', 'copy', 'nan', 'posinf', 'neginf'),
    'nanargmax': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'nanargmin': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'nancumprod': ('a', 'axis', 'dtype', 'out'),
    'nancumsum': ('a', 'axis', 'dtype', 'out'),
    'nanmax': ('a', 'axis', 'out', 'keepdims'),
    'nanmean': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'nanmedian': ('a', 'axis', 'out', 'overwrite_input', 'keepdims'),
    'nanmin': ('a', 'axis', 'out', 'keepdims'),
    'nanprod': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'nanstd': ('a', 'axis', 'dtype', 'out', 'ddof', 'keepdims'),
    'nansum': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'nanvar': ('a', 'axis', 'dtype', 'out', 'ddof', 'keepdims'),
    'nonzero': ('a',),
    'ones': ('shape', 'dtype', 'order'),
    'ones_like': ('a', 'dtype', 'order', 'subok', 'shape'),
    'outer': ('a', 'b', 'out'),
    'packbits': ('a', 'axis', 'bitorder'),
    'partition': ('a', 'kth', 'axis'),
    'percentile': ('a', 'q', 'axis', 'out', 'overwrite_input', 'method', 'keepdims', 'interpolation'),
    'piecewise': ('x', 'condlist', 'funclist'),
    'place': ('arr', 'mask', 'vals'),
    'poly': ('seq_of_zeros',),
    'polyadd': ('a1', 'a2'),
    'polyfit': ('x', 'y', 'deg', 'rcond', 'full', 'w', 'cov'),
    'polymul': ('a1', 'a2'),
    'polysub': ('a1', 'a2'),
    'polyval': ('p', 'x'),
    'prod': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'product': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'ptp': ('a', 'axis', 'out', 'keepdims'),
    'put': ('a', 'ind', 'v', 'mode'),
    'put_along_axis': ('arr', 'indices', 'values', 'axis'),
    'putmask': ('a', 'mask', 'values'),
    'quantile': ('a', 'q', 'axis', 'out', 'overwrite_input', 'method', 'keepdims', 'interpolation'),
    'ravel': ('a', 'order'),
    'ravel_multi_index': ('multi_index', 'dims', 'mode', 'order'),
    'real': ('val',),
    'real_if_close': ('a', 'tol'),
    'repeat': ('a', 'repeats', 'axis'),
    'require': ('a', 'dtype', 'requirements'),
    'reshape': ('a', 'newshape', 'order', 'copy'),
    'resize': ('a', 'new_shape'),
    'roll': ('a', 'shift', 'axis'),
    'rollaxis': ('a', 'axis', 'start'),
    'roots': ('p',),
    'rot90': ('a', 'k', 'axes'),
    'round': ('a', 'decimals', 'out'),
    'round_': ('a', 'decimals', 'out'),
    'row_stack': ('tup', 'dtype', 'casting'),
    'save': ('file', 'arr', 'allow_pickle'),
    'searchsorted': ('a', 'v', 'side', 'sorter'),
    'select': ('condlist', 'choicelist', 'default'),
    'setdiff1d': ('ar1', 'ar2', 'assume_unique'),
    'setxor1d': ('ar1', 'ar2', 'assume_unique'),
    'shape': ('a',),
    'shares_memory': ('a', 'b', 'max_work'),
    'sort': ('a', 'axis', 'kind'),
    'sort_complex': ('a',),
    'split': ('ary', 'indices_or_sections', 'axis'),
    'squeeze': ('a', 'axis'),
    'stack': ('tup', 'axis', 'out', 'dtype', 'casting'),
    'std': ('a', 'axis', 'dtype', 'out', 'ddof', 'keepdims'),
    'sum': ('a', 'axis', 'dtype', 'out', 'keepdims'),
    'swapaxes': ('a', 'axis1', 'axis2'),
    'take': ('a', 'indices', 'axis', 'out'),
    'take_along_axis': ('a', 'indices', 'axis'),
    'tensordot': ('a', 'b', 'axes'),
    'tile': ('A', 'reps'),
    'trace': ('a', 'offset', 'axis1', 'axis2', 'dtype', 'out'),
    'transpose': ('a', 'axes'),
    'trapezoid': ('y', 'x', 'dx', 'axis'),
    'tri': ('N', 'M', 'k', 'dtype'),
    'tril': ('m', 'k'),
    'tril_indices': ('n', 'k', 'm'),
    'tril_indices_from': ('arr', 'k'),
    'trim_zeros': ('filt', 'trim'),
    'triu': ('m', 'k'),
    'triu_indices': ('n', 'k', 'm'),
    'triu_indices_from': ('arr', 'k'),
    'union1d': ('arr1', 'arr2'),
    'unique': ('ar', 'return_index', 'return_inverse', 'return_counts', 'axis', 'equal_nan'),
    'unique_all': ('x',),
    'unique_counts': ('x',),
    'unique_inverse': ('x',),
    'unique_values': ('x',),
    'unpackbits': ('a', 'axis', 'bitorder'),
    'unravel_index': ('indices', 'dims', 'order'),
    'unwrap': ('p', 'discont', 'axis', 'period'),
    'vander': ('x', 'N', 'increasing'),
    'var': ('a', 'axis', 'dtype', 'out', 'ddof', 'keepdims'),
    'vdot': ('a', 'b'),
    'vsplit': ('ary', 'indices_or_sections'),
    'vstack': ('tup', 'dtype', 'casting'),
    'where': ('condition', 'x', 'y'),
    'who': ('vardict',),
    'zeros': ('shape', 'dtype', 'order'),
    'zeros_like': ('a', 'dtype', 'order', 'subok', 'shape'),
}

# keyword arguments of a CuPy ufunc call (``cupy/_core/_kernel.pyx``, ``ufunc.__call__``: ``out``, ``dtype``,
# ``casting``; NumPy's ``where=``, ``order=``, ``subok=`` are refused) and of cupy.matmul, a ``_GUFunc``
UFUNC_KWARGS = ("out", "dtype", "casting")
MATMUL_KWARGS = ("axes", "axis", "keepdims", "casting", "dtype", "signature", "order", "out")

# keyword arguments of the cupy.ndarray methods (``core.pyx``, ``_ndarray_base``; None: takes ``*args``)
NDARRAY_KWARGS = {
    'T': (),
    'all': ('axis', 'out', 'keepdims'),
    'any': ('axis', 'out', 'keepdims'),
    'argmax': ('axis', 'out', 'dtype', 'keepdims'),
    'argmin': ('axis', 'out', 'dtype', 'keepdims'),
    'argpartition': ('kth', 'axis'),
    'argsort': ('axis', 'kind'),
    'astype': ('dtype', 'order', 'casting', 'subok', 'copy'),
    'byteswap': ('inplace',),
    'choose': ('choices', 'out', 'mode'),
    'clip': ('min', 'max', 'out'),
    'compress': ('condition', 'axis', 'out'),
    'conj': (),
    'conjugate': (),
    'copy': ('order',),
    'cstruct': (),
    'cumprod': ('axis', 'dtype', 'out'),
    'cumsum': ('axis', 'dtype', 'out'),
    'device': (),
    'diagonal': ('offset', 'axis1', 'axis2'),
    'dot': ('b', 'out'),
    'dump': ('file',),
    'dumps': (),
    'fill': ('value',),
    'flags': (),
    'flat': (),
    'flatten': ('order',),
    'get': ('stream', 'order', 'out', 'blocking'),
    'imag': ('value',),
    'item': (),
    'itemsize': (),
    'mT': (),
    'max': ('axis', 'out', 'keepdims'),
    'mdspan': ('index_type', 'allow_unsafe'),
    'mean': ('axis', 'dtype', 'out', 'keepdims'),
    'min': ('axis', 'out', 'keepdims'),
    'nbytes': (),
    'ndim': (),
    'nonzero': (),
    'partition': ('kth', 'axis'),
    'prod': ('axis', 'dtype', 'out', 'keepdims'),
    'ptp': ('axis', 'out', 'keepdims'),
    'put': ('indices', 'values', 'mode'),
    'ravel': ('order',),
    'real': ('value',),
    'reduced_view': ('dtype',),
    'repeat': ('repeats', 'axis'),
    'reshape': None,
    'round': ('decimals', 'out'),
    'scatter_add': ('slices', 'value'),
    'scatter_max': ('slices', 'value'),
    'scatter_min': ('slices', 'value'),
    'searchsorted': ('v', 'side', 'sorter'),
    'set': ('arr', 'stream'),
    'sort': ('axis', 'kind'),
    'squeeze': ('axis',),
    'std': ('axis', 'dtype', 'out', 'ddof', 'keepdims'),
    'strides': (),
    'sum': ('axis', 'dtype', 'out', 'keepdims'),
    'swapaxes': ('axis1', 'axis2'),
    'take': ('indices', 'axis', 'out'),
    'toDlpack': (),
    'tobytes': ('order',),
    'tofile': ('fid', 'sep', 'format'),
    'tolist': (),
    'trace': ('offset', 'axis1', 'axis2', 'dtype', 'out'),
    'transpose': None,
    'var': ('axis', 'dtype', 'out', 'ddof', 'keepdims'),
    'view': ('dtype', 'array_class'),
}
