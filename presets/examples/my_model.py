"""Example builders for presets/own_model_python.yaml (docs/own-model.md): the study calls each in
every env with the Keras module of the cell (standalone Keras 2, tf.keras, tf_keras or Keras 3)
and the data spec, and times the model it returns. Write yours the same way: use `keras` as
given (never `import tensorflow.keras` here), so that one file serves every Keras flavour.

The data spec `data` has batch, shape (one sample's), input ("float" or "tokens"), dtype,
target ("binary", "sparse" or "regression"), classes and vocabulary, as keys and attributes.
"""


def scaled_gelu_layer(keras):
    """A custom layer: x * sigmoid(1.702 x) times a learned per-channel scale. Defined inside a
    function because its base class is the cell's Keras."""

    class ScaledGelu(keras.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight(name="scale", shape=(int(input_shape[-1]),),
                                         initializer="ones", trainable=True)
            super(ScaledGelu, self).build(input_shape)

        def call(self, x):
            return x * keras.activations.sigmoid(1.702 * x) * self.scale

        def compute_output_shape(self, input_shape):
            return input_shape

    return ScaledGelu


def build(keras, data):
    """A small functional model on sequence data (steps, channels): two branches, a wide
    Conv1D and a narrow Conv1D followed by the custom layer, concatenated, pooled and classified
    with one sigmoid unit (binary targets). Left uncompiled: the study compiles it with the
    config's loss, optimizer and learning rate."""
    layers = keras.layers
    inputs = layers.Input(shape=tuple(data.shape))
    wide = layers.Conv1D(16, 9, padding="same", activation="relu")(inputs)
    narrow = layers.Conv1D(16, 3, padding="same")(inputs)
    narrow = scaled_gelu_layer(keras)()(narrow)
    x = layers.Concatenate()([wide, narrow])
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dense(16, activation="relu")(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    return keras.models.Model(inputs, outputs)


def build_compiled(keras, data):
    """The same model, compiled by the builder: the study keeps this compile (its optimizer and
    loss) for fit, train_on_batch and predict; a custom loop uses the config's."""
    model = build(keras, data)
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    return model


def build_applications(keras, data):
    """A keras.applications architecture without its weights (weights=None) at a small image
    size: MobileNetV2 on 32 x 32 x 3 images, ten classes (sparse targets). Each Keras has its
    own copy of keras.applications. Standalone Keras 2.2.5 on TF 1.14 cannot build it inside the
    explicit tf.device of graph-mode inference (an AttributeError of TF's device capture): such
    cells are written as failed with that line, which is why the preset's inference grid leaves
    standalone Keras out."""
    return keras.applications.MobileNetV2(input_shape=tuple(data.shape), alpha=0.35,
                                          weights=None, classes=data.classes)
