// C++ names for the demangling tests: a namespace, a template, a member function.
namespace app {

template <typename T>
__attribute__((noipa)) T clamp(T v, T lo, T hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

struct Filter {
    int k;
    int apply(int v) const;
};

__attribute__((noipa)) int Filter::apply(int v) const
{
    return clamp<int>(v * k, -100, 100);
}

}  // namespace app

extern "C" int cpp_entry(int x)
{
    app::Filter f{3};
    return f.apply(x) + static_cast<int>(app::clamp<long>(x, 0, 5));
}
