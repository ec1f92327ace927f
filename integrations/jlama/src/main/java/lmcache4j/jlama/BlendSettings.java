package lmcache4j.jlama;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import com.github.tjake.jlama.model.AbstractModel;

import lmcache4j.engine.config.LMCacheEngineConfig;

/**
 * CacheBlend's settings, read from LMCache's keys as LMCache's blender reads them.
 *
 * @param separator      the token ids that split a prompt into segments: {@code blend_special_str}
 *                       tokenized without BOS
 * @param recomputeRatio the share of cached tokens recomputed after the check layer: the first of
 *                       {@code blend_recompute_ratios}, in {@code [0, 1]}
 * @param checkLayer     the layer where cached and fresh keys are compared: {@code blend_check_layers},
 *                       one layer
 * @param minTokens      {@code blend_min_tokens}: shorter prompts are prefilled without blending
 */
public record BlendSettings(int[] separator, double recomputeRatio, int checkLayer, int minTokens) {
    public BlendSettings {
        Objects.requireNonNull(separator, "separator");
        if (separator.length == 0) {
            throw new IllegalArgumentException("the blend separator has no tokens: set blend_special_str to text the tokenizer"
                    + " encodes to at least one token (LMCache's default is \" # # \")");
        }
        if (!(recomputeRatio >= 0 && recomputeRatio <= 1)) {
            throw new IllegalArgumentException("blend_recompute_ratios: a share of the cached tokens, 0 to 1, not " + recomputeRatio);
        }
        if (checkLayer < 0) {
            throw new IllegalArgumentException("blend_check_layers: a layer index is 0 or more, not " + checkLayer);
        }
        if (minTokens < 0) {
            throw new IllegalArgumentException("blend_min_tokens is 0 or more, not " + minTokens);
        }
        separator = separator.clone();
    }

    /**
     * The settings of {@code config} for {@code model}: {@code enable_blending} must be true, and
     * {@code blend_recompute_ratios} and {@code blend_check_layers} set (LMCache has no default for
     * either; its example uses {@code [0.15]} and {@code [1]}).
     *
     * @throws IllegalArgumentException naming the setting to fix
     */
    public static BlendSettings from(LMCacheEngineConfig config, AbstractModel model) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(model, "model");
        if (!config.enableBlending()) {
            throw new IllegalArgumentException("blending is off: set enable_blending=true");
        }
        List<Double> ratios = config.blendRecomputeRatios().orElseThrow(() -> new IllegalArgumentException(
                "enable_blending needs blend_recompute_ratios (LMCache has no default; its example uses [0.15])"));
        List<Integer> checks = config.blendCheckLayers().orElseThrow(() -> new IllegalArgumentException(
                "enable_blending needs blend_check_layers (LMCache has no default; its example uses [1])"));
        if (ratios.isEmpty()) {
            throw new IllegalArgumentException("blend_recompute_ratios is empty: give one share, such as [0.15]");
        }
        if (checks.size() != 1) {
            throw new IllegalArgumentException("blend_check_layers: lmcache4j blends with one check layer, such as [1]; got "
                    + checks);
        }
        if (config.blendThresholds().isPresent()) {
            throw new IllegalArgumentException("blend_thresholds: selection by threshold is not implemented (LMCache's blender"
                    + " selects by blend_recompute_ratios only); leave it unset");
        }
        int layers = model.getConfig().numberOfLayers;
        if (checks.getFirst() >= layers) {
            throw new IllegalArgumentException("blend_check_layers: layer " + checks.getFirst() + " is past this model's "
                    + layers + " layers (0 to " + (layers - 1) + ")");
        }
        return new BlendSettings(separatorTokens(config.blendSpecialStr(), model), ratios.getFirst(), checks.getFirst(),
                config.blendMinTokens());
    }

    /** {@code text} as the model's tokenizer encodes it, without a leading BOS. */
    static int[] separatorTokens(String text, AbstractModel model) {
        long[] ids = model.getTokenizer().encode(text);
        int from = ids.length > 0 && ids[0] == model.getConfig().bosToken ? 1 : 0;
        return Arrays.stream(ids, from, ids.length).mapToInt(Math::toIntExact).toArray();
    }

    /** A copy of the separator's token ids. */
    @Override
    public int[] separator() {
        return separator.clone();
    }

    /** The same settings with another recompute ratio. */
    public BlendSettings withRecomputeRatio(double ratio) {
        return new BlendSettings(separator, ratio, checkLayer, minTokens);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BlendSettings s && Arrays.equals(separator, s.separator) && recomputeRatio == s.recomputeRatio
                && checkLayer == s.checkLayer && minTokens == s.minTokens;
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(separator), recomputeRatio, checkLayer, minTokens);
    }

    @Override
    public String toString() {
        return "BlendSettings[separator=" + Arrays.toString(separator) + ", recomputeRatio=" + recomputeRatio + ", checkLayer="
                + checkLayer + ", minTokens=" + minTokens + "]";
    }
}
