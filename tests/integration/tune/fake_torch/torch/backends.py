class _Flags:
    pass


cudnn = _Flags()
cudnn.benchmark = False
cudnn.allow_tf32 = True
cuda = _Flags()
cuda.matmul = _Flags()
cuda.matmul.allow_tf32 = False
