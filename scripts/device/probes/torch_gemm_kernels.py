import torch
torch.backends.cuda.matmul.allow_tf32 = True
a = torch.empty(8192, 8192, device="cuda").uniform_(-1, 1)
b = torch.empty(8192, 8192, device="cuda").uniform_(-1, 1)
for _ in range(2): torch.matmul(a, b)
torch.cuda.synchronize()
a8 = a.to(torch.float8_e4m3fn); b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()
s = torch.tensor(1.0, device="cuda")
for _ in range(2): torch._scaled_mm(a8, b8, scale_a=s, scale_b=s, out_dtype=torch.bfloat16)
torch.cuda.synchronize()
print("done")
